"""Issue 32: the multilabel-classification and multilabel-text tasks, proven on generated
projects.

Label sets from an image folder's labels file, binary cross-entropy, one threshold per
label tuned on the validation split and saved in the checkpoint, micro/macro-F1 and mAP,
predict's label sets agreeing with evaluate, bad labels files refused in one line, and a
SIGKILLed run resumed bit-identically. For texts, the same from a labels column whose cells
join the labels by `data.label_separator`.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import SLOW_DATASET, generate, kill_tree_once, run_in_project, run_ptgen, train_errors
from PIL import Image

from ptgen.components import add_component

PKG = "ml_proj"
LABELS = ("red", "green", "blue")
STEPS = 14  # 8 steps per epoch (64 samples, batches of 8): crosses an epoch boundary


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where, task = tmp_path_factory.mktemp("multilabel"), "multilabel-classification"
    path = generate(where, name="ml-proj", task=task, features=("predict",))  # synthetic first
    add_component(path, "dataset", "images", "image-folder")
    (path / "src" / PKG / "data" / "slowsynthetic.py").write_text(SLOW_DATASET)
    return path


def write_images(root: Path, counts: dict[str, int]) -> dict[str, list[str]]:
    """Noise images whose colour channels carry their labels; labels.csv maps each (by path
    relative to root, in sub-folders) to its label set, some of them empty."""
    sets: dict[str, list[str]] = {}
    gen = torch.Generator().manual_seed(0)
    for split, n in counts.items():
        for i in range(n):
            chosen = [name for name in LABELS if float(torch.rand(1, generator=gen)) < 0.4]
            pixels = torch.randint(0, 70, (12, 12, 3), generator=gen, dtype=torch.uint8)
            for channel, name in enumerate(LABELS):
                if name in chosen:
                    pixels[..., channel] += 150
            file = f"{split}/part{i % 2}/{i}.png"
            (root / file).parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(pixels.numpy()).save(root / file)
            sets[file] = chosen
    with open(root / "labels.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["file", "labels"])
        writer.writerows([file, "|".join(chosen)] for file, chosen in sets.items())
    return sets


def test_listed_and_rendered_without_the_other_objectives(project: Path) -> None:
    listed = run_ptgen("list")
    assert listed.returncode == 0 and "multilabel-classification" in listed.stdout
    source = project / "src" / PKG
    tasks = (source / "tasks.py").read_text()
    assert "class Multilabel" in tasks and "BCE" in tasks
    assert "class Classification" not in tasks and "class Regression" not in tasks
    config = (source / "config.py").read_text()
    assert "pos_weight" in config and "class_weights" not in config and "top5" not in config
    assert '"micro_f1", "macro_f1", "map", "loss"' in config
    assert "top-k" not in (source / "predict.py").read_text()
    mine = "slowsynthetic.py"  # this test's own module, not rendered
    for tool in (
        ["ruff", "check", "--extend-exclude", mine, "."],
        ["black", "--check", "-l", "100", "--extend-exclude", mine, "."],
    ):
        checked = subprocess.run([sys.executable, "-m", *tool], cwd=project, capture_output=True)
        assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()


@pytest.mark.slow
def test_project_tests_and_smoke_pass(project: Path) -> None:
    result = run_in_project(project, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
    assert result.returncode == 0, result.stdout[-3000:]
    smoke = run_in_project(project, "-m", PKG, "smoke", "--json")
    assert smoke.returncode == 0, smoke.stderr
    assert json.loads(smoke.stdout.strip().splitlines()[-1])["ok"] is True


@pytest.mark.slow
def test_thresholds_saved_and_predict_agrees_with_evaluate(project: Path, tmp_path: Path) -> None:
    root = tmp_path / "images"
    sets = write_images(root, {"train": 96, "test": 32})  # val: held out of train
    out = tmp_path / "run"
    sets_args = [f"data.root={root}", "data.name=images", "data.image_size=12"]
    sets_args += [f"train.out_dir={out}", "train.epochs=4", "data.num_workers=0"]
    sets_args += ["train.monitor=macro_f1", "train.pos_weight=auto", "train.device=cpu"]
    trained = run_in_project(
        project, "-m", PKG, "train", *[x for s in sets_args for x in ("--set", s)]
    )
    assert trained.returncode == 0, trained.stderr
    checkpoint = torch.load(out / "best.pt", map_location="cpu", weights_only=True)
    thresholds = checkpoint["thresholds"]
    assert len(thresholds) == 3 and all(0.0 <= t < 1.0 for t in thresholds)
    assert checkpoint["class_weights"].shape == (3,)  # pos_weight=auto, saved for resume
    assert checkpoint["data_state"]["classes"] == sorted(LABELS)

    evaluated = run_in_project(
        project, "-m", PKG, "evaluate", "--checkpoint", str(out / "best.pt"), "--split", "test",
        "--json",
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr
    result = json.loads(evaluated.stdout.strip().splitlines()[-1])
    assert result["num_samples"] == 32 and result["thresholds"] == thresholds
    assert set(result["per_class"]) == set(LABELS)
    for metric in ("micro_f1", "macro_f1", "map"):
        assert 0.0 <= result[metric] <= 1.0
    assert result["micro_f1"] > 0.7  # the channels carry the labels: learnable in 4 epochs

    tests = sorted(str(root / file) for file in sets if file.startswith("test/"))
    predicted = run_in_project(
        project, "-m", PKG, "predict", "--checkpoint", str(out / "best.pt"), *tests
    )
    assert predicted.returncode == 0, predicted.stderr
    records = [json.loads(line) for line in predicted.stdout.splitlines()]
    assert len(records) == 32
    tp = fp = fn = 0
    per_label_tp = dict.fromkeys(LABELS, 0)
    for record in records:
        assert set(record["probabilities"]) == set(LABELS)
        truth = set(sets[Path(record["input"]).relative_to(root).as_posix()])
        got = set(record["labels"])
        tp, fp, fn = tp + len(got & truth), fp + len(got - truth), fn + len(truth - got)
        for name in got & truth:
            per_label_tp[name] += 1
    assert result["micro_f1"] == pytest.approx(2 * tp / max(2 * tp + fp + fn, 1))
    for name, m in result["per_class"].items():
        assert round(m["recall"] * m["support"]) == per_label_tp[name]


def test_bad_labels_files_are_one_line_errors(project: Path, tmp_path: Path) -> None:
    def root_with(name: str) -> Path:
        root = tmp_path / name
        write_images(root, {"train": 6, "val": 2})
        return root

    missing = root_with("missing")
    (missing / "labels.csv").unlink()
    unlisted = root_with("unlisted")
    lines = (unlisted / "labels.csv").read_text().splitlines()
    (unlisted / "labels.csv").write_text("\n".join(lines[:-1]) + "\n")  # the last image
    unknown = root_with("unknown")
    with open(unknown / "labels.csv", "a", encoding="utf-8") as handle:
        handle.write("train/nowhere.png,red\n")
    empty = root_with("empty")
    (empty / "labels.json").write_text(json.dumps({file: [] for file in list_files(empty)}))
    said = train_errors(
        project,
        PKG,
        tmp_path / "out",
        f"data.name=images data.root={missing}",
        f"data.name=images data.root={unlisted}",
        f"data.name=images data.root={unknown}",
        f"data.name=images data.root={empty} data.labels_file=labels.json",
    )
    assert "labels.csv does not exist" in said[0]
    assert "1 val image(s) have no entry in data.labels_file" in said[1]
    assert "names 1 file(s) not under" in said[2] and "nowhere.png" in said[2]
    assert "no labels at all" in said[3]


def list_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.png"))


def weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=True)["model_state_dict"]


@pytest.mark.slow
def test_sigkill_then_resume_is_bit_identical(project: Path, tmp_path: Path) -> None:
    base = ["data.name=slowsynthetic", "data.num_samples=64", "data.image_size=16"]
    base += ["model.width=8", "train.batch_size=8", "train.epochs=2", "train.device=cpu"]
    base += ["train.checkpoint_every=3", f"train.max_steps={STEPS}", "train.pos_weight=auto"]

    def command(out: Path, *extra: str) -> list[str]:
        sets = [*base, f"train.out_dir={out}", *extra]
        return [sys.executable, "-m", PKG, "train", *[x for s in sets for x in ("--set", s)]]

    env = dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")
    reference = tmp_path / "reference"
    done = subprocess.run(command(reference), cwd=project, env=env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()

    out = tmp_path / "run"
    proc = subprocess.Popen(
        command(out), cwd=project, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    kill_tree_once(proc, out / "step-00000009.pt")  # after the first evaluation
    assert proc.returncode == -signal.SIGKILL
    killed = torch.load(out / "last.pt", weights_only=True)
    assert 9 <= killed["step"] < STEPS and killed["thresholds"] is not None

    resumed = subprocess.run(
        command(out, "train.resume=auto"), cwd=project, env=env, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming from" in resumed.stdout
    got, want = (torch.load(p / "last.pt", weights_only=True) for p in (out, reference))
    assert got["step"] == want["step"] == STEPS
    different = [k for k in want["model_state_dict"] if not torch.equal(
        got["model_state_dict"][k], want["model_state_dict"][k])]  # fmt: skip
    assert not different, different
    assert got["thresholds"] == want["thresholds"]
    assert torch.equal(got["class_weights"], want["class_weights"])


# multilabel-text: label sets from a labels column of CSV/TSV/JSONL text

TEXT_PKG = "mlt_proj"
TOPICS = {
    "politics": ("vote", "senate", "law"),
    "sports": ("goal", "match", "team"),
    "tech": ("chip", "code", "robot"),
}
FILLER = "the a of and to in is it that was for on".split()


@pytest.fixture(scope="module")
def text_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A multilabel-text project with the text kind (synthetic while data.root is empty)."""
    where = tmp_path_factory.mktemp("multilabel-text")
    return generate(where, name="mlt-proj", task="multilabel-text", dataset="text")


def write_texts(root: Path, counts: dict[str, int], extra: str = "") -> dict[str, list[list[str]]]:
    """root/<split>.csv: filler words with two words of each of the text's topics; the
    labels column joins them by "|" (some rows have none). `extra`: a label only the test
    split has."""
    gen = torch.Generator().manual_seed(0)
    sets: dict[str, list[list[str]]] = {}
    root.mkdir(parents=True, exist_ok=True)
    for split, n in counts.items():
        sets[split] = []
        with open(root / f"{split}.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "labels"])
            for i in range(n):
                chosen = [name for name in TOPICS if float(torch.rand(1, generator=gen)) < 0.4]
                words = [FILLER[(i * 7 + k) % len(FILLER)] for k in range(6)]
                words += [TOPICS[name][(i + k) % 3] for name in chosen for k in range(2)]
                cell = "|".join(chosen + ([extra] if extra and i % 5 == 0 else []))
                writer.writerow([" ".join(sorted(words)), cell])
                sets[split].append(chosen)
    return sets


def test_text_task_listed_and_rendered_alone(text_project: Path) -> None:
    listed = run_ptgen("list")
    assert listed.returncode == 0 and "multilabel-text" in listed.stdout
    source = text_project / "src" / TEXT_PKG
    tasks = (source / "tasks.py").read_text()
    assert "class Multilabel" in tasks and "vocab_size" in tasks
    assert "class Classification" not in tasks and "in_channels" not in tasks
    config = (source / "config.py").read_text()
    assert "pos_weight" in config and "class_weights" not in config and "top5" not in config
    data = sorted(p.name for p in (source / "data").glob("*.py"))
    assert data == ["__init__.py", "_inputs.py", "_raw.py", "_sequences.py", "_synthetic.py"] + [
        "_text_files.py", "text.py"
    ]  # fmt: skip
    assert "label_separator" in (source / "data" / "text.py").read_text()
    assert "image" not in (source / "data" / "_synthetic.py").read_text()
    for tool in (["ruff", "check", "."], ["black", "--check", "-l", "100", "."]):
        checked = subprocess.run(
            [sys.executable, "-m", *tool], cwd=text_project, capture_output=True
        )
        assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()


@pytest.mark.slow
def test_text_project_tests_and_smoke_pass(text_project: Path) -> None:
    result = run_in_project(text_project, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
    assert result.returncode == 0, result.stdout[-3000:]
    smoke = run_in_project(text_project, "-m", TEXT_PKG, "smoke", "--json")
    assert smoke.returncode == 0, smoke.stdout[-3000:] + smoke.stderr
    assert json.loads(smoke.stdout.strip().splitlines()[-1])["ok"] is True


@pytest.mark.slow
def test_text_csv_trains_and_predict_agrees_with_evaluate(
    text_project: Path, tmp_path: Path
) -> None:
    root = tmp_path / "texts"
    sets = write_texts(root, {"train": 160, "val": 40}) | write_texts(
        root, {"test": 30}, extra="weather"
    )
    out = tmp_path / "run"
    sets_args = [f"data.root={root}", f"train.out_dir={out}", "train.epochs=8"]
    sets_args += ["train.lr=0.003", "data.num_workers=0", "train.device=cpu"]
    trained = run_in_project(
        text_project, "-m", TEXT_PKG, "train", *[x for s in sets_args for x in ("--set", s)]
    )
    assert trained.returncode == 0, trained.stderr
    checkpoint = torch.load(out / "best.pt", map_location="cpu", weights_only=True)
    thresholds = checkpoint["thresholds"]
    assert len(thresholds) == 3 and all(0.0 <= t < 1.0 for t in thresholds)
    assert checkpoint["data_state"]["classes"] == sorted(TOPICS)

    evaluated = run_in_project(
        text_project, "-m", TEXT_PKG, "evaluate", "--checkpoint", str(out / "best.pt"),
        "--split", "test", "--json",
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr
    assert "labels not seen in training are ignored: weather" in evaluated.stderr
    result = json.loads(evaluated.stdout.strip().splitlines()[-1])
    assert result["num_samples"] == 30 and result["thresholds"] == thresholds
    assert set(result["per_class"]) == set(TOPICS)
    assert result["micro_f1"] > 0.7  # each topic shows in two words: learnable in 8 epochs

    # the test file's labels column (with its unknown label) is not read by predict
    predicted = run_in_project(
        text_project, "-m", TEXT_PKG, "predict", "--checkpoint", str(out / "best.pt"),
        str(root / "test.csv"),
    )  # fmt: skip
    assert predicted.returncode == 0, predicted.stderr
    records = [json.loads(line) for line in predicted.stdout.splitlines()]
    assert [record["row"] for record in records] == list(range(1, 31))
    tp = fp = fn = 0
    per_label_tp = dict.fromkeys(TOPICS, 0)
    for record, truth in zip(records, map(set, sets["test"]), strict=True):
        assert set(record["probabilities"]) == set(TOPICS)
        got = set(record["labels"])
        tp, fp, fn = tp + len(got & truth), fp + len(got - truth), fn + len(truth - got)
        for name in got & truth:
            per_label_tp[name] += 1
    assert result["micro_f1"] == pytest.approx(2 * tp / max(2 * tp + fp + fn, 1))
    for name, m in result["per_class"].items():
        assert round(m["recall"] * m["support"]) == per_label_tp[name]


def test_bad_text_labels_are_one_line_errors(text_project: Path, tmp_path: Path) -> None:
    unlabelled = tmp_path / "unlabelled.csv"
    unlabelled.write_text("text,labels\n" + "a goal,\nthe vote,\n" * 4, encoding="utf-8")
    labelled = tmp_path / "labelled.csv"
    labelled.write_text(
        "text,labels\n" + "a goal,sports\nthe vote,politics\n" * 4, encoding="utf-8"
    )
    short = tmp_path / "short.csv"
    short.write_text("text,labels\na goal,sports\nthe vote\n", encoding="utf-8")
    said = train_errors(
        text_project,
        TEXT_PKG,
        tmp_path / "out",
        f"data.root={unlabelled}",
        f"data.root={labelled} data.target=tags",
        f"data.root={short}",
    )
    assert "gives the training rows no labels at all" in said[0]
    assert "has no label column 'tags'" in said[1]
    assert "short.csv:3: 1 fields, the header has 2" in said[2]
