"""Issue 48, round three of the fault probe (helper 48a): predict and export never write over
a checkpoint (known by its content), the data or an existing file without --force; masks
never land on the data's own; a labels file that contradicts itself, lr-find with no finite
loss, an --output-dir that is a file and an sbatch script run the wrong way are one line
each. Real generated projects, trained a few steps; one project per kind (module fixtures).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from helpers import generate, run_in_project, train_errors
from PIL import Image
from test_component_kinds import write_table
from test_segmentation import write_masks

TABLE_PKG, SEG_PKG, ML_PKG = "tabby", "maskly", "tagged"

# The project's command line called in one process for each (folder, argv): one torch import.
CALLS = """
import contextlib, importlib, io, json, os, sys

main = importlib.import_module(f"{sys.argv[1]}.cli").main
said = []
for folder, argv in json.loads(sys.argv[2]):
    os.chdir(folder)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    said.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(said))
"""

# The csv kind with every number of its training rows made NaN: no loss is ever finite.
POISONED = """
from .csv import Options, build as build_csv


class Poisoned:
    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        sample = self.dataset[index]
        return {k: v * float("nan") if v.is_floating_point() else v for k, v in sample.items()}


def build(cfg, seed, state=None):
    bundle = build_csv(cfg, seed, state)
    bundle.train = Poisoned(bundle.train)
    return bundle
"""


def calls(project: Path, package: str, *runs: tuple[Path, list[str]]) -> list[list]:
    """[exit status, stdout, stderr] of each (folder, argv) run of the project's main."""
    plan = json.dumps([[str(folder), argv] for folder, argv in runs])
    result = run_in_project(project, "-c", CALLS, package, plan)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def one_line_error(said: list) -> str:
    """The one error line of a run that failed with exit status 1 (after notes, if any)."""
    code, _, err = said
    lines = err.splitlines()
    assert code == 1 and lines[-1].startswith("error: ") and "Traceback" not in err, said
    assert [line for line in lines if line.startswith("error")] == lines[-1:], said
    return lines[-1]


@pytest.fixture(scope="module")
def table_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A csv-kind regression project with predict, export, lr-find, slurm and sweep."""
    features = ("export", "lr-find", "predict", "slurm", "sweep")
    project = generate(
        tmp_path_factory.mktemp("table"),
        TABLE_PKG,
        task="tabular-regression",
        model="mlp",
        dataset="csv",
        features=features,
    )
    (project / "src" / TABLE_PKG / "data" / "poisoned.py").write_text(POISONED)
    return project


@pytest.fixture(scope="module")
def table_run(table_project: Path) -> tuple[Path, Path, Path]:
    """The table project trained 2 steps: (project, its run folder, its data file)."""
    data = write_table(table_project.parent / "table.csv")
    sets = [f"data.root={data}", "train.max_steps=2", "train.batch_size=16"]
    result = run_in_project(
        table_project, "-m", TABLE_PKG, "train", *(a for s in sets for a in ("--set", s))
    )
    assert result.returncode == 0, result.stderr
    return table_project, table_project / "runs" / "default", data


@pytest.mark.slow
def test_predict_output_never_replaces_a_checkpoint_the_data_or_an_input(
    table_run, tmp_path: Path
) -> None:
    """Item 2: as export's --output: an existing file only with --force; a checkpoint, a
    file of the checkpoint's run, the training data and an input never."""
    project, run, data = table_run
    last, new = run / "last.pt", write_table(tmp_path / "new.csv", rows=5)
    mine = tmp_path / "mine.jsonl"
    mine.write_text("mine\n")
    held = (last, data, new, mine, run / "metrics.csv", run / "config.toml")
    before = {path: path.read_bytes() for path in held}
    predict = ["predict", "--checkpoint", str(last), str(new), "--output"]
    said = calls(
        project,
        TABLE_PKG,
        (project, [*predict, str(last), "--force"]),
        (project, [*predict, str(data), "--force"]),
        (project, [*predict, str(new), "--force"]),
        (project, [*predict, str(mine)]),
        (project, [*predict, str(run / "metrics.csv"), "--force"]),  # the run's own files
        (project, [*predict, str(run / "config.toml"), "--force"]),
    )
    errors = [one_line_error(s) for s in said]
    assert "may be a checkpoint, never replaced" in errors[0], errors[0]
    assert f"is part of {data} (the checkpoint's run, the training data" in errors[1], errors
    assert f"is part of {new} (" in errors[2], errors[2]
    assert f"{mine} exists; replace it with --force" in errors[3], errors[3]
    assert f"is part of {run} (" in errors[4] and f"is part of {run} (" in errors[5], errors
    assert {path: path.read_bytes() for path in before} == before
    (forced,) = calls(project, TABLE_PKG, (project, [*predict, str(mine), "--force"]))
    assert forced[0] == 0, forced  # --force replaces the user's own file
    assert [json.loads(line)["row"] for line in mine.read_text().splitlines()] == [1, 2, 3, 4, 5]


@pytest.mark.slow
def test_export_and_predict_know_a_checkpoint_by_its_content_not_its_name(
    table_run, tmp_path: Path
) -> None:
    """Item 4: torch's zip and pickle formats and safetensors, under any name, are never
    replaced, --force or not; an earlier export is."""
    safetensors = pytest.importorskip("safetensors.torch")
    project, run, _ = table_run
    last = run / "last.pt"
    copies = ["model.PT", "model.ckpt", "pytorch_model.bin", "model.pth.tar", "weights", "m.pt2"]
    for name in copies:
        shutil.copy(last, tmp_path / name)
    weights = torch.load(last, weights_only=True)["model_state_dict"]
    torch.save(weights, tmp_path / "legacy.pt2", _use_new_zipfile_serialization=False)
    safetensors.save_file(weights, tmp_path / "model.safetensors")
    shutil.copy(tmp_path / "model.safetensors", tmp_path / "s.pt2")
    held = {path: path.read_bytes() for path in tmp_path.iterdir()}
    checkpoint = ["--checkpoint", str(last)]
    export = ["export", *checkpoint, "--format", "pt2", "--force", "--output"]
    predict = ["predict", *checkpoint, str(write_table(tmp_path / "in.csv", rows=3)), "--force"]
    exported = tmp_path / "exported" / "model.pt2"
    said = calls(
        project,
        TABLE_PKG,
        *[(project, [*export, str(tmp_path / n)]) for n in ("m.pt2", "legacy.pt2", "s.pt2")],
        *[(project, [*predict, "--output", str(path)]) for path in held],
        (project, [*export, str(exported)]),
        (project, [*export, str(exported)]),  # an export is not a checkpoint: replaced
    )
    for result in said[:-2]:
        assert "may be a checkpoint, never replaced" in one_line_error(result)
    assert {path: path.read_bytes() for path in held} == held
    assert [code for code, _, _ in said[-2:]] == [0, 0], said[-2:]


@pytest.mark.slow
def test_export_output_without_the_format_suffix_is_refused_naming_the_file_to_use(
    table_run, tmp_path: Path
) -> None:
    """Item 15: `--output model` for pt2 is one line of ptgen's, not torch's warning."""
    project, run, _ = table_run
    target = tmp_path / "model"
    export = ["export", "--checkpoint", str(run / "last.pt"), "--format", "pt2"]
    (said,) = calls(project, TABLE_PKG, (project, [*export, "--output", str(target)]))
    assert f"e.g. --output {target}.pt2" in one_line_error(said)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_lr_find_without_a_finite_loss_or_with_a_file_for_output_dir_says_so(
    table_run, tmp_path: Path
) -> None:
    """Item 11: no ValueError from the plot, no raw [Errno 17]; nothing written."""
    project, _, data = table_run
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    lr_find = ["lr-find", "--set", f"data.root={data}", "--set", "train.batch_size=16"]
    said = calls(
        project,
        TABLE_PKG,
        (project, [*lr_find, "--set", "data.name=poisoned", "--output-dir", str(tmp_path / "lr")]),
        (project, [*lr_find, "--output-dir", str(a_file)]),
        (project, [*lr_find, "--output-dir", str(a_file / "sub")]),
    )
    errors = [one_line_error(s) for s in said]
    assert "the loss was not finite" in errors[0], errors[0]
    assert "lower --start-lr or check the data" in errors[0], errors[0]
    assert f"{a_file} is a file, not a folder" in errors[1], errors[1]
    assert f"{a_file} is a file, not a folder" in errors[2], errors[2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert a_file.read_text() == "mine\n"


def test_sbatch_scripts_run_the_wrong_way_say_how_to_submit_them(
    table_project: Path, tmp_path: Path
) -> None:
    """Item 18: `bash slurm/train.sbatch` outside Slurm, and a job submitted from another
    folder: one line saying what to do (was: unbound variable; run.sh not found)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    scripts = sorted((table_project / "slurm").glob("*.sbatch"))
    assert len(scripts) == 4
    for script in scripts:
        submit = f"sbatch slurm/{script.name}"
        here = subprocess.run(
            ["bash", f"slurm/{script.name}"], cwd=table_project, env=env, capture_output=True
        )
        said = here.stderr.decode()
        assert here.returncode == 1 and said.count("\n") == 1, said
        assert said.startswith("error: not a Slurm job") and said.endswith(f"{submit}\n"), said
        job = {**env, "SLURM_JOB_ID": "7", "SLURM_JOB_NAME": "demo", "SLURM_JOB_NODELIST": "n1"}
        elsewhere = subprocess.run(
            ["bash", str(script)], cwd=tmp_path, env=job, capture_output=True
        )
        said = elsewhere.stderr.decode()
        assert elsewhere.returncode == 1 and said.count("\n") == 1, said
        assert f"submitted from {tmp_path}, not the project's root" in said, said
        assert said.endswith(f"cd PROJECT && {submit}\n"), said
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def seg_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A segmentation project trained 2 steps: (project, its run folder, the data root)."""
    where = tmp_path_factory.mktemp("seg")
    project = generate(
        where, SEG_PKG, task="segmentation", dataset="image-masks", features=("predict",)
    )
    root = write_masks(where / "data", {"train": 16, "val": 4})
    sets = [f"data.root={root}", "data.num_classes=3", "data.image_size=16", "model.width=8"]
    sets += ["train.batch_size=8", "train.max_steps=2", "data.num_workers=0"]
    result = run_in_project(
        project, "-m", SEG_PKG, "train", *(a for s in sets for a in ("--set", s))
    )
    assert result.returncode == 0, result.stderr
    return project, project / "runs" / "default", root


@pytest.mark.slow
def test_segmentation_predict_in_a_split_folder_never_writes_over_its_masks(seg_run) -> None:
    """Item 3: run inside root/val, the default --mask-dir is not val/masks but masks/
    beside the checkpoint; an existing mask is replaced only with --force."""
    project, run, root = seg_run
    split = root / "val"
    truth = {path: path.read_bytes() for path in (split / "masks").iterdir()}
    predict = ["predict", "--checkpoint", str(run / "last.pt"), "images"]
    said = calls(
        project,
        SEG_PKG,
        (split, predict),
        (split, predict),  # its masks are there now
        (split, [*predict, "--mask-dir", "masks"]),  # the data's own
        (split, [*predict, "--force"]),
    )
    assert said[0][0] == 0, said[0]
    masks = [json.loads(line)["mask"] for line in said[0][1].splitlines()]
    assert masks == [str(run / "masks" / f"img{i:03d}.png") for i in range(4)]
    assert f"{run / 'masks' / 'img000.png'} exists; replace it with --force" in one_line_error(
        said[1]
    )
    assert f"{Path('masks') / 'img000.png'} exists" in one_line_error(said[2])
    assert said[3][0] == 0, said[3]
    assert {path: path.read_bytes() for path in (split / "masks").iterdir()} == truth


@pytest.fixture(scope="module")
def multilabel_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    task = "multilabel-classification"
    return generate(tmp_path_factory.mktemp("ml"), ML_PKG, task=task, dataset="image-folder")


def test_multilabel_config_and_readme_describe_the_labels_file_not_class_folders(
    multilabel_project: Path,
) -> None:
    """Item 16: data.root, val_fraction and the test split as a labels-file task has them."""
    config = (multilabel_project / "configs" / "default.toml").read_text(encoding="utf-8")
    readme = (multilabel_project / "README.md").read_text(encoding="utf-8")
    for text in (config, readme):
        assert "<class>" not in text and "each class" not in text
    root = next(line for line in config.splitlines() if line.startswith("root = "))
    assert "data.labels_file" in root, root
    assert "`root/test/` (its images named in `data.labels_file`)" in readme


def test_multilabel_labels_file_rows_that_disagree_are_an_error_naming_both(
    multilabel_project: Path, tmp_path: Path
) -> None:
    """Item 10: two rows (or JSON entries) for one image with different label sets."""
    root = tmp_path / "data"
    for file in ("train/a.png", "train/b.png", "train/c.png", "val/d.png"):
        (root / file).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (8, 8), (200, 40, 40)).save(root / file)
    rows = ["file,labels", "train/a.png,red", "train/b.png,blue", "train/c.png,red"]
    rows += ["val/d.png,blue", "train/b.png,blue", "./train/a.png,red|green"]
    (root / "labels.csv").write_text("\n".join(rows) + "\n")  # b twice, the same: fine
    entries = ['"train/a.png": ["red"]', '"train/b.png": "blue"', '"train/c.png": []']
    entries += ['"val/d.png": ["blue"]', '"train/c.png": ["blue"]']
    (root / "labels.json").write_text("{" + ", ".join(entries) + "}")
    common = f"data.root={root} data.num_workers=0 data.cache=none train.max_steps=1"
    said = train_errors(
        multilabel_project,
        ML_PKG,
        tmp_path / "out",
        common,
        f"{common} data.labels_file=labels.json",
    )
    assert "row 2 and row 7 give train/a.png different labels (red and green|red)" in said[0]
    assert "entry 3 ('train/c.png') and entry 5 ('train/c.png') give train/c.png" in said[1]
    assert not (tmp_path / "out" / "last.pt").exists()
