"""Every model and dataset kind, added to a real project of each task, passes that
project's own tests, black and ruff, and trains (`smoke`) on synthetic and on real files.

One project per task holds every compatible kind, so the expensive parts (the project's
pytest run, one smoke run per model) happen once per task. Run with `-n 2`. The newer
tasks (OWN_MODULE) get the cheap checks here (every kind rendered, clean and exported;
the text-corpus kind on real files): their own modules already run their projects' tests
and smoke-train them on real files.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from helpers import features_for, run_in_project, write_text
from PIL import Image

from ptgen.components import add_component
from ptgen.errors import PtgenError
from ptgen.lint import LintConfig, lint_paths
from ptgen.options import default_component_name, default_kind, kinds_for_task
from ptgen.project import ProjectOptions, new_project

TASKS = [
    "image-classification",
    "sequence-classification",
    "tabular-regression",
    "tabular-classification",
    "multilabel-classification",
    "segmentation",
    "language-modeling",
]
# test_multilabel.py, test_segmentation.py and test_language_modeling.py run these tasks'
# project tests, smoke runs and file-kind errors: here they skip what would repeat them.
OWN_MODULE = {"multilabel-classification", "segmentation", "language-modeling"}
FILE_KINDS = {
    "image-classification": "image-folder",
    "sequence-classification": "text",
    "tabular-regression": "csv",
    "tabular-classification": "csv",
}


def write_images(root: Path) -> Path:
    """root/train/<class>/*.png and a val/ split; the classes differ in colour.

    Enough samples for smoke's 7 steps of 16 in one epoch (as for the other files)."""
    for split, count in (("train", 60), ("val", 6)):
        for label, colour in (("cat", (200, 40, 40)), ("dog", (40, 40, 200))):
            folder = root / split / label
            folder.mkdir(parents=True)
            for i in range(count):
                shade = tuple(min(c + i, 255) for c in colour)
                Image.new("RGB", (10 + i % 5, 12), shade).save(folder / f"{i}.png")
    return root


def write_table(path: Path, rows: int = 150, labels: bool = False) -> Path:
    """Numbers, a category and a missing cell now and then; y is a number or a class name."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["a", "b", "c", "colour", "y"])
        for i in range(rows):
            a, b, c = i % 7, (i * 3) % 11, i / 10
            y = 2 * a - b + 0.5 * c
            label = "high" if y > 0 else "low"
            colour = ("red", "blue")[i % 2]
            writer.writerow([a, "NA" if i % 13 == 0 else b, c, colour, label if labels else y])
    return path


def real_root(task: str, where: Path) -> Path:
    if task == "image-classification":
        return write_images(where / "images")
    if task == "sequence-classification":
        return write_text(where / "reviews.tsv")
    return write_table(where / "table.csv", labels=task == "tabular-classification")


@pytest.fixture(scope="module", params=TASKS)
def project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project of one task with every compatible model and dataset kind added."""
    task = request.param
    path = new_project(
        # every feature (export, fsdp, ...) and the streaming the shard kinds bring: added
        # later to a project without it, it is merged in (git), which this project has not
        ProjectOptions(name="kinds", task=task, features=(*features_for(task), "streams")),
        tmp_path_factory.mktemp(task),
        run_smoke=False,
        init_git=False,
    ).path
    for kind in kinds_for_task("model", task):
        if kind != default_kind("model", task):
            add_component(path, "model", default_component_name(kind), kind)
    for kind in kinds_for_task("dataset", task):
        if kind != "synthetic":
            variable = True if task == "sequence-classification" else None
            add_component(
                path, "dataset", default_component_name(kind), kind, variable_length=variable
            )
    return path


def test_every_kind_is_rendered(project: Path) -> None:
    package = project / "src" / "kinds"
    task = next(t for t in TASKS if t in str(project))
    for kind in kinds_for_task("model", task):
        module = default_component_name(kind)
        assert (package / "models" / f"{module}.py").is_file()
        assert (project / "tests" / f"test_model_{module}.py").is_file()
    for kind in kinds_for_task("dataset", task):
        assert (package / "data" / f"{default_component_name(kind)}.py").is_file()
    source = "\n".join(p.read_text() for p in package.rglob("*.py"))
    assert ".cuda()" not in source and "import ptgen" not in source


def test_black_ruff_and_ptgen_lint_are_clean(project: Path) -> None:
    black = run_in_project(project, "-m", "black", "--check", "--quiet", "src", "tests")
    assert black.returncode == 0, black.stderr
    ruff = run_in_project(project, "-m", "ruff", "check", "--no-cache", "src", "tests")
    assert ruff.returncode == 0, ruff.stdout + ruff.stderr
    findings = lint_paths(sorted(project.glob("src/kinds/*/*.py")), config=LintConfig())
    assert [f"{f.path.name}:{f.line} {f.code} {f.message}" for f in findings] == []


def skip_if_own_module(project: Path) -> str:
    task = next(t for t in TASKS if t in str(project))
    if task in OWN_MODULE:
        pytest.skip(f"{task}: its own test module runs this")
    return task


@pytest.mark.slow
def test_project_tests_pass(project: Path) -> None:
    skip_if_own_module(project)
    result = run_in_project(project, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


@pytest.mark.slow
def test_every_model_and_dataset_trains(project: Path, tmp_path: Path) -> None:
    """One smoke run per model; the file-based dataset is smoked on real files, once
    with the default model and once with every other model in turn on synthetic data."""
    task = skip_if_own_module(project)
    root = real_root(task, tmp_path)
    file_data = default_component_name(FILE_KINDS[task])
    for i, model in enumerate(kinds_for_task("model", task)):
        data = ["--set", f"data.name={file_data}"]
        data += ["--set", f"data.root={root}"] if i % 2 == 0 else []
        name = default_component_name(model)  # hf-encoder -> hf_encoder
        result = run_in_project(
            project, "-m", "kinds", "smoke", "--set", f"model.name={name}", *data
        )
        assert result.returncode == 0, f"{model} on {data}:\n{result.stdout}\n{result.stderr}"
        assert "output shape" in result.stdout and " trainable, " in result.stdout  # summary


# Run inside each project: every model kind, exported by the project's own exporters in
# both formats and checked against the eager model, or refused with the kind's reason.
EXPORT_EVERY_KIND = """
import tempfile
from pathlib import Path

from kinds import export
from kinds.config import available, component, options_class
from kinds.data._synthetic import example_batch, make_splits
from kinds.models import build_model

spec = make_splits(options_class("data")(num_samples=8), 0)[2]
batches = [example_batch(spec, size) for size in export.CHECK_BATCH_SIZES]
for kind in available("model"):
    if hasattr(component("model", kind), "NOT_EXPORTABLE"):
        print(kind, "refused")
        continue
    model = build_model(options_class("model", kind)(name=kind), spec).eval()
    for fmt, exporter in export.EXPORTERS.items():
        with tempfile.TemporaryDirectory() as tmp:
            run = exporter(model, batches[0], Path(tmp) / f"model.{fmt}")
            print(kind, fmt, export.check(model, run, batches))
"""


@pytest.mark.slow
def test_every_model_kind_exports_or_says_why_not(project: Path) -> None:
    """Both formats for every kind (the whole `export` command is tested in
    test_inference.py); rnn and hf-encoder refuse, their modules saying why."""
    result = run_in_project(project, "-c", EXPORT_EVERY_KIND)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    lines = result.stdout.splitlines()
    task = next(t for t in TASKS if t in str(project))
    for kind in kinds_for_task("model", task):
        module = kind.replace("-", "_")  # models are added under their module name
        if kind in ("rnn", "hf-encoder"):
            assert f"{module} refused" in lines
        else:
            for fmt in ("pt2", "onnx"):
                assert any(line.startswith(f"{module} {fmt} ") for line in lines), (kind, fmt)


# Run inside each project (its package is `kinds`): the file-based kinds on real files,
# their held-out splits, their error messages and the reuse of their saved state.
FILE_KIND_CHECKS = {
    "image-classification": """
from pathlib import Path

import pytest
import torch
from PIL import Image

from kinds.config import ConfigError
from kinds.data import build_data
from kinds.data.image_folder import Options


def make(root: Path, split: str, label: str, count: int, colour: tuple[int, int, int]) -> None:
    (root / split / label).mkdir(parents=True)
    for i in range(count):
        Image.new("RGB", (9, 7), colour).save(root / split / label / f"{i}.jpg")


def test_holds_out_without_val_and_reuses_state(tmp_path: Path) -> None:
    make(tmp_path, "train", "b", 10, (0, 0, 250))
    make(tmp_path, "train", "a", 10, (250, 0, 0))
    cfg = Options(name="image_folder", root=str(tmp_path), image_size=8, val_fraction=0.2)
    bundle = build_data(cfg, seed=0)
    assert (len(bundle.train), len(bundle.val)) == (16, 4)
    assert bundle.state["classes"] == ["a", "b"]
    assert bundle.train[0]["inputs"].shape == (3, 8, 8)
    images = torch.stack([bundle.train[i]["inputs"] for i in range(16)])  # (N, 3, 8, 8)
    torch.testing.assert_close(images.mean(dim=(0, 2, 3)), torch.zeros(3), atol=1e-4, rtol=0)
    again = build_data(cfg, seed=5, state=bundle.state)
    # the held-out files (the cache's after the training split's) do not depend on the seed
    assert again.val.cache.decoded.sources == bundle.val.cache.decoded.sources


@pytest.mark.parametrize(
    ("layout", "error", "needle"),
    [
        ("missing", FileNotFoundError, "does not exist"),
        ("no-train", FileNotFoundError, "no train/"),
        ("no-images", ConfigError, "without images in .*train: a"),
    ],
)
def test_bad_roots_say_what_is_wrong(tmp_path: Path, layout: str, error: type, needle: str) -> None:
    if layout == "no-images":
        (tmp_path / "train" / "a").mkdir(parents=True)
        (tmp_path / "train" / "a" / "notes.txt").write_text("x")
    root = tmp_path / "nowhere" if layout == "missing" else tmp_path
    with pytest.raises(error, match=needle):
        build_data(Options(name="image_folder", root=str(root)), seed=0)


def test_unknown_val_class_is_refused(tmp_path: Path) -> None:
    make(tmp_path, "train", "a", 2, (250, 0, 0))
    make(tmp_path, "val", "z", 1, (0, 0, 250))
    with pytest.raises(ConfigError, match="not seen in training: z"):
        build_data(Options(name="image_folder", root=str(tmp_path)), seed=0)
""",
    "sequence-classification": """
from pathlib import Path

import pytest

from kinds.config import ConfigError
from kinds.data import build_data
from kinds.data.text import Options


def write(path: Path, rows: list[str]) -> Path:
    path.write_text("\\n".join(["text\\tlabel", *rows]) + "\\n", encoding="utf-8")
    return path


def test_vocabulary_from_train_only_and_reused(tmp_path: Path) -> None:
    write(tmp_path / "train.tsv", ["Good, good film!\\tpos", "bad film\\tneg", "\\tneg"])
    write(tmp_path / "val.tsv", ["unseen good words here\\tpos"])
    cfg = Options(name="text", root=str(tmp_path), max_length=3, vocab_size=4)
    bundle = build_data(cfg, seed=0)
    assert bundle.state["vocab"] == ["<pad>", "<unk>", "film", "good"]
    assert bundle.state["classes"] == ["neg", "pos"]
    assert bundle.train[0]["inputs"].tolist() == [3, 1, 3]  # good , good (cut at 3)
    assert bundle.train[2]["inputs"].tolist() == [1]  # an empty text is one unknown token
    assert bundle.val[0]["inputs"].tolist() == [1, 3, 1]
    batch = bundle.collate_fn([bundle.train[i] for i in range(3)])  # padded per batch
    assert batch["lengths"].tolist() == [3, 2, 1] and batch["inputs"].shape == (3, 3)
    cfg.vocab_size = 1000  # a saved state wins over the config, as after a checkpoint
    assert build_data(cfg, seed=0, state=bundle.state).spec.vocab_size == 4


def test_single_file_is_split_and_errors_are_clear(tmp_path: Path) -> None:
    rows = [f"sample {i}\\t{'ab'[i % 2]}" for i in range(20)]
    bundle = build_data(Options(name="text", root=str(write(tmp_path / "all.tsv", rows))), 0)
    assert (len(bundle.train), len(bundle.val)) == (16, 4)
    bad = write(tmp_path / "bad.tsv", ["only one field"])
    with pytest.raises(ConfigError, match="1 fields, the header has 2"):
        build_data(Options(name="text", root=str(bad)), 0)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no train.tsv"):
        build_data(Options(name="text", root=str(tmp_path / "empty")), 0)
""",
    "tabular-regression": """
from pathlib import Path

import pytest
import torch

from kinds.config import ConfigError
from kinds.data import build_data
from kinds.data.csv import Options


def test_standardised_on_train_with_target_column(tmp_path: Path) -> None:
    (tmp_path / "train.csv").write_text("y,a,b\\n1,10,5\\n3,20,5\\n5,30,5\\n")
    (tmp_path / "val.csv").write_text("y,a,b\\n7,40,5\\n")
    cfg = Options(name="csv", root=str(tmp_path), target="y")
    bundle = build_data(cfg, seed=0)
    assert bundle.state["features"] == ["a"]  # b is the same in every row: left out
    assert bundle.spec.num_features == 1
    torch.testing.assert_close(bundle.val[0]["inputs"], torch.tensor([2.0]))  # (40-20)/10
    torch.testing.assert_close(bundle.val[0]["targets"], torch.tensor([2.0]))  # (7-3)/2
    assert bundle.state["target_std"] == pytest.approx(2.0)
    (tmp_path / "val.csv").write_text("y,a,b\\n7,oops,5\\n")
    with pytest.raises(ConfigError, match="val.csv:2: column 'a' is not a number"):
        build_data(cfg, seed=0, state=bundle.state)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        build_data(Options(name="csv", root=str(tmp_path / "nope.csv")), seed=0)
""",
    "language-modeling": """
from pathlib import Path

import pytest

from kinds.config import ConfigError
from kinds.data import build_data
from kinds.data.text_corpus import Options


def test_folder_splits_bytes_and_blocks(tmp_path: Path) -> None:
    (tmp_path / "train.txt").write_text("abcdefghij" * 5, encoding="utf-8")
    (tmp_path / "val.txt").write_text("é" * 10, encoding="utf-8")  # 2 bytes each
    (tmp_path / "test.txt").write_text("xyz" * 10, encoding="utf-8")
    bundle = build_data(Options(name="text_corpus", root=str(tmp_path), block_size=4), 0)
    assert bundle.spec.num_outputs == 256 and bundle.state == {"tokenizer": "byte"}
    assert (len(bundle.train), len(bundle.val), len(bundle.load_test())) == (12, 4, 7)
    first = bundle.train[0]
    assert first["inputs"].tolist() == list(b"abcd") and first["targets"].tolist() == list(b"bcde")
    assert bundle.val[0]["inputs"].tolist() == list("éé".encode())
    with pytest.raises(ConfigError, match="too few for one block"):
        build_data(Options(name="text_corpus", root=str(tmp_path), block_size=40), 0)
""",
    "tabular-classification": """
from pathlib import Path

from kinds.data import build_data
from kinds.data.csv import Options


def test_class_names_from_the_training_split(tmp_path: Path) -> None:
    (tmp_path / "train.csv").write_text("x,kind\\n1,cat\\n2,dog\\n3,cat\\n")
    (tmp_path / "val.csv").write_text("x,kind\\n4,dog\\n")
    bundle = build_data(Options(name="csv", root=str(tmp_path)), seed=0)
    assert bundle.state["classes"] == ["cat", "dog"] and bundle.spec.num_outputs == 2
    assert int(bundle.val[0]["targets"]) == 1
""",
}


def test_file_kinds_on_real_files(project: Path) -> None:
    task = next(t for t in TASKS if t in str(project))
    if task not in FILE_KIND_CHECKS:
        pytest.skip(f"{task}: its own test module checks its file kind on real files")
    (project / "tests" / "test_file_kinds.py").write_text(FILE_KIND_CHECKS[task].lstrip())
    try:
        result = run_in_project(
            project, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_file_kinds.py"
        )
    finally:
        (project / "tests" / "test_file_kinds.py").unlink()
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_image_model_is_refused_in_a_sequence_project(tmp_path: Path) -> None:
    path = new_project(
        ProjectOptions(name="seq", task="sequence-classification"),
        tmp_path,
        run_smoke=False,
        init_git=False,
    ).path
    with pytest.raises(PtgenError) as info:
        add_component(path, "model", "wide", "resnet")
    message = str(info.value)
    assert "does not fit a sequence-classification project" in message
    assert "use one of: hf-encoder, rnn, transformer" in message
    assert not (path / "src" / "seq" / "models" / "wide.py").exists()
