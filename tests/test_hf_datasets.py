"""The `hf-datasets` dataset kind (issue 49): real datasets built with the `datasets` library
(images with the Image feature, text with a ClassLabel, a table), saved with `save_to_disk`
and as a Parquet folder with a README card; each project trains a few steps on them, then
`evaluate --split test` and `predict` run from the checkpoint alone. Bad input is one
line. Images go through image-folder's code (data/_images.py): the disk cache is reused
while the dataset's fingerprint stays, and both kinds prepare the same inputs.
Slow: a run SIGKILLed mid-epoch and resumed with train.resume=auto ends with weights
torch.equal to an uninterrupted run's.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import generate, kill_tree_once, run_in_project, train_errors

datasets = pytest.importorskip("datasets")
np = pytest.importorskip("numpy")
Image = pytest.importorskip("PIL.Image")

FAST = ["train.device=cpu", "train.batch_size=8", "train.epochs=1", "train.max_steps=4"]
CARD = """---
dataset_info:
  features:
  - name: text
    dtype: string
  - name: label
    dtype:
      class_label:
        names:
          '0': neg
          '1': pos
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*
  - split: validation
    path: data/validation-*
  - split: test
    path: data/test-*
---
# Film reviews: a test dataset
"""


def png(i: int) -> bytes:
    """A 12x12 PNG, dark for even i, light for odd i."""
    pixels = np.random.default_rng(i).integers(0, 55, (12, 12, 3)) + (i % 2) * 200
    out = io.BytesIO()
    Image.fromarray(pixels.astype(np.uint8)).save(out, "PNG")
    return out.getvalue()


def images(count: int, first: int, broken: tuple[int, ...] = ()) -> datasets.Dataset:
    features = datasets.Features(
        {"photo": datasets.Image(), "kind": datasets.ClassLabel(names=["light", "dark"])}
    )
    cells = [
        {"bytes": b"not an image" if i in broken else png(i), "path": None}
        for i in range(first, first + count)
    ]
    labels = [1 - i % 2 for i in range(first, first + count)]  # ClassLabel order: light first
    return datasets.Dataset.from_dict({"photo": cells, "kind": labels}, features=features)


def texts(count: int, first: int) -> datasets.Dataset:
    words = {1: "great lovely fine good".split(), 0: "awful bad poor terrible".split()}
    labels = [i % 2 for i in range(first, first + count)]
    rows = [f"This film was {words[y][i % 4]}, truly! #{i}" for i, y in enumerate(labels)]
    features = datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"])}
    )
    return datasets.Dataset.from_dict({"text": rows, "label": labels}, features=features)


def table(count: int) -> datasets.Dataset:
    rng = np.random.default_rng(0)
    x = rng.normal(size=count)
    colour = rng.choice(["red", "green", "blue"], size=count)
    features = datasets.Features(
        {
            "x": datasets.Value("float32"),
            "colour": datasets.Value("string"),
            "size": datasets.ClassLabel(names=["S", "M", "L"]),
            "price": datasets.Value("float64"),
        }
    )
    values = {"x": x, "colour": colour, "size": rng.integers(0, 3, count), "price": 3 * x + 1}
    return datasets.Dataset.from_dict(values, features=features)


def tags(count: int, seed: int) -> datasets.Dataset:
    """Texts with one or two topics each, as a list of ClassLabel (multilabel)."""
    topics = {"food": "pizza bread soup", "music": "song band guitar", "sport": "goal match team"}
    rng = np.random.default_rng(seed)
    rows, labels = [], []
    for _ in range(count):
        chosen = sorted(rng.choice(3, int(rng.integers(1, 3)), replace=False).tolist())
        words = [str(rng.choice(list(topics.values())[k].split())) for k in chosen]
        rows.append(" ".join([*words, "today"]))
        labels.append(chosen)
    features = datasets.Features(
        {
            "text": datasets.Value("string"),
            "topics": datasets.List(datasets.ClassLabel(names=list(topics))),
        }
    )
    return datasets.Dataset.from_dict({"text": rows, "topics": labels}, features=features)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The datasets on disk: images (save_to_disk, no validation split, a test split), the
    same with two broken images, texts as a Parquet folder with a card, a table."""
    datasets.disable_progress_bars()
    root = tmp_path_factory.mktemp("hfdata")
    datasets.DatasetDict({"train": images(64, 0), "test": images(16, 100)}).save_to_disk(
        root / "images"
    )
    datasets.DatasetDict({"train": images(24, 0, broken=(3, 7))}).save_to_disk(root / "broken")
    streamed = {"train": images(48, 0), "validation": images(16, 200), "test": images(8, 100)}
    datasets.DatasetDict(streamed).save_to_disk(root / "streamed")
    folder = root / "reviews"
    (folder / "data").mkdir(parents=True)
    for split, (count, first) in {"train": (64, 0), "validation": (24, 1), "test": (16, 3)}.items():
        texts(count, first).to_parquet(str(folder / "data" / f"{split}-00000-of-00001.parquet"))
    (folder / "README.md").write_text(CARD, encoding="utf-8")
    datasets.DatasetDict({"train": table(120), "test": table(30)}).save_to_disk(root / "table")
    tagged = {"train": tags(96, 0), "validation": tags(32, 1), "test": tags(16, 2)}
    datasets.DatasetDict(tagged).save_to_disk(root / "tagged")
    return {
        "images": root / "images",
        "broken": root / "broken",
        "reviews": folder,
        "streamed": root / "streamed",
        "tagged": root / "tagged",
        "table": root / "table",
    }


@pytest.fixture(scope="module")
def image_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("hfimg"), "hfimg", dataset="hf-datasets")


def train(project: Path, out: Path, *sets: str) -> subprocess.CompletedProcess[str]:
    settings = [*FAST, f"train.out_dir={out}", *sets]
    result = run_in_project(
        project, "-m", project.name, "train", *[a for s in settings for a in ("--set", s)]
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def evaluate_test(project: Path, checkpoint: Path) -> dict:
    """`evaluate --split test` from the checkpoint alone (no data.root given: the
    checkpoint's config names it)."""
    result = run_in_project(
        project,
        "-m",
        project.name,
        "evaluate",
        "--checkpoint",
        str(checkpoint),
        "--split",
        "test",
        "--json",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_images_from_save_to_disk_train_evaluate_and_predict(
    image_project: Path, data: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    train(image_project, out, f"data.root={data['images']}", "data.image_size=16")
    checkpoint = torch.load(out / "last.pt", weights_only=True)
    state = checkpoint["data_state"] if "data_state" in checkpoint else checkpoint["config"]
    saved = json.dumps(state, default=str)
    assert "photo" in saved and "kind" in saved  # the columns found by their types
    report = evaluate_test(image_project, out / "last.pt")
    assert report["num_samples"] == 16 and set(report["per_class"]) == {"light", "dark"}
    picture = tmp_path / "light.png"
    picture.write_bytes(png(1))
    result = run_in_project(
        image_project,
        "-m",
        image_project.name,
        "predict",
        "--checkpoint",
        str(out / "last.pt"),
        str(picture),
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1])["label"] in {"light", "dark"}


def test_class_names_splits_and_held_out_rows(image_project: Path, data: dict[str, Path]) -> None:
    """Class names from the ClassLabel (its order, not sorted); no validation split: 20%
    of the training rows held out, disjoint, the same every run."""
    script = f"""
import torch
from {image_project.name}.data.hf_datasets import Options, build
a = build(Options(root={str(data['images'])!r}, image_size=16), 0)
b = build(Options(root={str(data['images'])!r}, image_size=16), 1)
inputs = [torch.stack([s.val[i]["inputs"] for i in range(len(s.val))]) for s in (a, b)]
print(a.state["classes"], len(a.train), len(a.val), torch.equal(*inputs))
"""
    result = run_in_project(image_project, "-c", script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == "['light', 'dark'] 51 13 True"


def test_bad_input_is_one_line(image_project: Path, data: dict[str, Path], tmp_path: Path) -> None:
    said = train_errors(
        image_project,
        image_project.name,
        tmp_path / "bad",
        f"data.root={tmp_path / 'nowhere'}",
        f"data.root={data['images']} data.train_split=training",
        f"data.root={data['images']} data.label_column=colour",
        f"data.root={data['images']} data.label_column=photo",
        f"data.root={data['images']} data.image_column=kind",
        f"data.root={data['broken']}",
    )
    assert "no such folder" in said[0]
    assert "no split 'training'" in said[1] and "its splits: train, test" in said[1]
    assert "'colour' is not a column" in said[2] and "its columns: photo, kind" in said[2]
    assert "not classes" in said[3]
    assert "not an Image column" in said[4]
    assert (
        "2 images of the train split do not decode" in said[5]
        and "row 3" in said[5]
        and "row 7" in said[5]
    )
    assert "data.skip_bad_files=true" in said[5]


def test_bad_images_are_skipped_when_asked(
    image_project: Path, data: dict[str, Path], tmp_path: Path
) -> None:
    result = train(
        image_project,
        tmp_path / "skip",
        f"data.root={data['broken']}",
        "data.skip_bad_files=true",
        "train.max_steps=1",
    )
    assert "2 images of the train split left out" in result.stderr


def test_a_cached_name_trains_offline_and_a_missing_one_says_how_to_get_it(
    image_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that is no folder is looked up in the Hugging Face cache, offline: one there
    (as `load_dataset("someone/films")` leaves it, its source folder gone) trains; one that
    is not says how to get it, and nothing is downloaded."""
    folder = tmp_path / "films"
    (folder / "data").mkdir(parents=True)
    for split, (count, first) in {"train": (24, 0), "validation": (8, 200)}.items():
        images(count, first).to_parquet(str(folder / "data" / f"{split}-00000-of-00001.parquet"))
    cache = tmp_path / "hf" / "datasets"
    datasets.load_dataset(str(folder), cache_dir=str(cache))
    (cache / "films").rename(cache / "someone___films")  # a hub download's folder name
    for file in (folder / "data").iterdir():
        file.unlink()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    result = train(
        image_project,
        tmp_path / "cached",
        "data.root=someone/films",
        "data.image_size=16",
        "train.max_steps=1",
    )
    assert "num_samples 8" in result.stdout  # its own validation split
    said = train_errors(
        image_project, image_project.name, tmp_path / "bad", "data.root=someone/songs"
    )
    assert "neither a folder nor a dataset in the local Hugging Face cache" in said[0]
    assert "datasets.load_dataset('someone/songs')" in said[0]


def test_datasets_is_imported_only_by_its_kind(image_project: Path) -> None:
    """`datasets` is imported by the kind's module alone (lazily: its test runs without
    a dataset); the core files every project shares import nothing of it. An image project
    gets the image helpers the kind needs, not the table ones."""
    source = image_project / "src" / image_project.name
    users = [
        p.name
        for p in source.rglob("*.py")
        if any(
            line.strip().startswith(("import datasets", "from datasets"))
            for line in p.read_text().splitlines()
        )
    ]
    assert users == ["hf_datasets.py"]
    # the features the kind needs in an image project (meta.yml modality_features), not a
    # tabular project's
    assert (source / "data" / "_augment.py").is_file()
    assert not (source / "data" / "_tables.py").exists()


# Run inside the image project: two builds whose training sampler fills the disk cache.
CACHE_RUNS = """
import contextlib, io, sys
from hfimg.data import build_data
from hfimg.data.hf_datasets import Options

said = io.StringIO()
with contextlib.redirect_stderr(said):
    for _ in range(2):  # the second build finds the first one's cache
        cfg = Options(name="hf_datasets", root=sys.argv[1], image_size=8, cache_dir=sys.argv[2])
        build_data(cfg, seed=0).train.set_epoch(0)
print(said.getvalue())
"""


def test_a_second_run_reuses_the_disk_cache_a_changed_dataset_does_not(
    image_project: Path, tmp_path: Path
) -> None:
    """The disk cache is named by the splits' fingerprints: the same dataset is decoded
    once (the second build reuses the file, untouched); saved again with other images it
    is decoded again, into a new file, and the old one removed."""
    root, cache = tmp_path / "photos", tmp_path / "cache"
    datasets.DatasetDict({"train": images(20, 0)}).save_to_disk(root)
    (image_project / "cache_runs.py").write_text(CACHE_RUNS)

    def runs() -> list[str]:
        result = run_in_project(image_project, "cache_runs.py", str(root), str(cache))
        assert result.returncode == 0, result.stderr
        return [line for line in result.stdout.splitlines() if "cach" in line]

    said = runs()
    assert said[0].startswith("data: caching 20 decoded images") and "reusing" not in said[0]
    assert said[-1].startswith("data: reusing the image cache") and len(said) == 3, said
    (first,) = cache.iterdir()
    datasets.DatasetDict({"train": images(20, 1)}).save_to_disk(root)  # new fingerprint
    said = runs()
    assert said[0].startswith("data: caching 20 decoded images"), said
    (second,) = cache.iterdir()
    assert second.name != first.name and second.name.startswith("photos-trainval-")
    assert not first.exists()  # the old cache is removed


# Run with both projects' src/ on the path: the two kinds on the same images.
SAME_INPUTS = """
import sys
from pathlib import Path

import torch
from hffolder.data.image_folder import Options as FolderOptions, build as build_folder
from hffolder.data.image_folder import raw_inputs as folder_inputs
from hfimg.data.hf_datasets import Options as HfOptions, build as build_hf
from hfimg.data.hf_datasets import raw_inputs as hf_inputs

saved, files = sys.argv[1], Path(sys.argv[2])
hf_cfg = HfOptions(root=saved, image_size=16, cache="memory", num_workers=0)
folder_cfg = FolderOptions(root=str(files), image_size=16, cache="memory", num_workers=0)
hf = build_hf(hf_cfg, 0)
alone = build_folder(folder_cfg, 0)  # its own statistics, from the same training images
print("stats", torch.allclose(alone.state["mean"], hf.state["mean"], atol=1e-6),
      torch.allclose(alone.state["std"], hf.state["std"], atol=1e-6))
state = {"classes": hf.state["classes"], "mean": hf.state["mean"], "std": hf.state["std"]}
folder = build_folder(folder_cfg, 0, state)
for bundle in (hf, folder):
    bundle.train.set_epoch(0)  # fills the caches
paths = folder.val.cache.decoded.sources[len(folder.train):]  # image-folder's val files
same = [
    torch.equal(hf.val[int(path.stem)]["inputs"], folder.val[i]["inputs"])
    and int(hf.val[int(path.stem)]["targets"]) == int(folder.val[i]["targets"])
    for i, path in enumerate(paths)
]
print("items", len(same), all(same))
prepare = [f(cfg, bundle.state).prepare for f, cfg, bundle in
           ((hf_inputs, hf_cfg, hf), (folder_inputs, folder_cfg, folder))]
print("prepare", all(torch.equal(prepare[0](p)["inputs"], prepare[1](p)["inputs"]) for p in paths))
"""


def test_the_kind_and_image_folder_prepare_the_same_inputs(
    image_project: Path, data: dict[str, Path], tmp_path: Path
) -> None:
    """The streamed dataset's train and validation splits exported as image files: every
    validation sample of image-folder is torch.equal to hf-datasets' sample of that row (the
    same decode, cache and normalisation, with the same statistics), and predict's
    `prepare` gives the same inputs from either checkpoint state."""
    files = tmp_path / "files"
    saved = datasets.load_from_disk(str(data["streamed"]))
    for split, folder in (("train", "train"), ("validation", "val")):
        rows = saved[split].cast_column("photo", datasets.Image(decode=False))
        names = rows.features["kind"].names
        for i, row in enumerate(rows):
            path = files / folder / names[row["kind"]] / f"{i:03}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(row["photo"]["bytes"])
    project = generate(tmp_path, "hffolder", dataset="image-folder")
    env = dict(os.environ, PYTHONPATH=f"{project / 'src'}{os.pathsep}{image_project / 'src'}")
    result = subprocess.run(
        [sys.executable, "-c", SAME_INPUTS, str(data["streamed"]), str(files)],
        cwd=tmp_path,
        env={**env, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["stats True True", "items 16 True", "prepare True"]


def save_tokenizer(folder: Path, texts: list[str]) -> Path:
    """A WordPiece tokenizer trained on `texts`, its padding token not 0 (index 1)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["[UNK]", "[PAD]", "[CLS]", "[SEP]"]
    wordpiece = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wordpiece.normalizer = normalizers.BertNormalizer(lowercase=True)
    wordpiece.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wordpiece.train_from_iterator(
        texts, trainers.WordPieceTrainer(vocab_size=80, special_tokens=specials)
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=wordpiece, unk_token="[UNK]", pad_token="[PAD]"
    )
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_text_from_a_parquet_folder_with_a_card(
    data: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Word tokens read by index; then a Hugging Face tokenizer (data.tokenizer, padding
    index 1) with the splits streamed; predict tokenises as training did."""
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))  # load_dataset's Arrow
    project = generate(tmp_path, "hftext", task="sequence-classification", dataset="hf-datasets")
    out = tmp_path / "run"
    result = train(project, out, f"data.root={data['reviews']}")
    assert "num_samples 24" in result.stdout  # the card's validation split, not held out
    report = evaluate_test(project, out / "last.pt")
    assert report["num_samples"] == 16 and set(report["per_class"]) == {"neg", "pos"}
    tokenizer = save_tokenizer(tmp_path / "tokenizer", texts(64, 0)["text"])
    out = tmp_path / "tokenized"
    streamed = ["data.streaming=true", f"data.tokenizer={tokenizer}", "train.max_steps=2"]
    result = train(project, out, f"data.root={data['reviews']}", *streamed)
    assert "num_samples 24" in result.stdout
    state = torch.load(out / "last.pt", weights_only=True)["data_state"]
    assert state["tokenizer"] == str(tokenizer) and "vocab" not in state
    reviews = tmp_path / "reviews.txt"
    reviews.write_text("a lovely film\nan awful film\n", encoding="utf-8")
    result = run_in_project(
        project, "-m", project.name, "predict", "--checkpoint", str(out / "last.pt"), str(reviews)
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.strip().splitlines()) == 2


@pytest.mark.slow
def test_table_regression_from_save_to_disk(data: dict[str, Path], tmp_path: Path) -> None:
    project = generate(tmp_path, "hftable", task="tabular-regression", dataset="hf-datasets")
    out = tmp_path / "run"
    train(project, out, f"data.root={data['table']}", "data.label_column=price")
    report = evaluate_test(project, out / "last.pt")
    assert report["num_samples"] == 30 and "mae" in report
    said = train_errors(
        project,
        project.name,
        tmp_path / "bad",
        f"data.root={data['table']} data.label_column=colour",
    )
    assert "'colour' holds" in said[0] and "not numbers" in said[0]
    rows = tmp_path / "rows.csv"
    rows.write_text("x,colour,size\n0.5,red,M\n", encoding="utf-8")
    result = run_in_project(
        project, "-m", project.name, "predict", "--checkpoint", str(out / "last.pt"), str(rows)
    )
    assert result.returncode == 0, result.stderr
    assert "value" in json.loads(result.stdout.splitlines()[-1])


@pytest.mark.slow
def test_label_sets_for_multilabel_text(data: dict[str, Path], tmp_path: Path) -> None:
    """A list of ClassLabel is found as the labels column; multi-hot targets, the label
    names in the ClassLabel's order."""
    project = generate(tmp_path, "hftags", task="multilabel-text", dataset="hf-datasets")
    out = tmp_path / "run"
    train(project, out, f"data.root={data['tagged']}", "train.max_steps=6")
    report = evaluate_test(project, out / "last.pt")
    assert report["num_samples"] == 16 and list(report["per_class"]) == ["food", "music", "sport"]


# The hf-datasets kind fetched slowly enough that a SIGKILL lands mid-epoch, read by
# index or streamed (data.streaming: each record decoded slowly).
SLOW = """
import dataclasses
import functools
import time

from ._streams import ShardStream
from .hf_datasets import Options, build as build_hf


class Slow:
    def __init__(self, dataset):
        self.dataset, self.targets = dataset, dataset.targets

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        time.sleep(0.02)
        return self.dataset[index]

    def set_epoch(self, epoch):
        self.dataset.set_epoch(epoch)


def slow(record, inner):
    time.sleep(0.02)
    return inner(record)


def build(cfg, seed, state=None):
    bundle = build_hf(cfg, seed, state)
    if isinstance(bundle.train, ShardStream):
        decode = functools.partial(slow, inner=bundle.train.decode)
        bundle.train = dataclasses.replace(bundle.train, decode=decode)
    else:
        bundle.train = Slow(bundle.train)
    return bundle
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "reading",
    [["data.augment=light"], ["data.streaming=true", "data.shuffle_buffer=8"]],
    ids=["in-memory", "streamed"],
)
def test_sigkill_mid_epoch_then_resume_gives_the_same_weights(
    image_project: Path, data: dict[str, Path], tmp_path: Path, reading: list[str]
) -> None:
    """In memory (augmentation drawn per (seed, epoch, index)) and streamed from the Arrow
    files (shards and buffer shuffled per (seed, epoch)): the batches after the resume are
    those of an uninterrupted run."""
    (image_project / "src" / image_project.name / "data" / "slowhf.py").write_text(SLOW)
    sets = [
        "data.name=slowhf",
        f"data.root={data['streamed']}",
        "data.image_size=16",
        *reading,
        "train.device=cpu",
        "train.batch_size=8",
        "train.epochs=2",
        "train.checkpoint_every=2",
    ]

    def command(out: Path, *more: str) -> list[str]:
        settings = [*sets, f"train.out_dir={out}", *more]
        return [
            sys.executable,
            "-m",
            image_project.name,
            "train",
            *[a for s in settings for a in ("--set", s)],
        ]

    env = dict(os.environ, PYTHONPATH=str(image_project / "src"), OMP_NUM_THREADS="1")
    reference = subprocess.run(
        command(tmp_path / "reference"), cwd=image_project, env=env, capture_output=True, text=True
    )
    assert reference.returncode == 0, reference.stderr
    out = tmp_path / "run"
    proc = subprocess.Popen(
        command(out),
        cwd=image_project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    kill_tree_once(proc, out / "step-00000004.pt")
    assert torch.load(out / "last.pt", weights_only=True)["epoch"] == 0  # mid-epoch (6 steps)
    resumed = subprocess.run(
        command(out, "train.resume=auto"),
        cwd=image_project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from {out / 'last.pt'}" in resumed.stdout
    got = torch.load(out / "last.pt", weights_only=True)
    want = torch.load(tmp_path / "reference" / "last.pt", weights_only=True)
    assert got["step"] == want["step"] == 12
    different = [
        k
        for k in want["model_state_dict"]
        if not torch.equal(got["model_state_dict"][k], want["model_state_dict"][k])
    ]
    assert not different
