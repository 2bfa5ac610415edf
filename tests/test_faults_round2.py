"""Issue 36, round two of the fault probe: predict reads inputs by the rules of training,
resume with changed settings decides per key, a stop signal during evaluation is honoured
at once. Real generated projects, really trained; one project per kind (module fixtures).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tomllib
import torch
from helpers import generate, run_in_project, train_errors

TEXT_PKG = "wordy"


def write_reviews(path: Path, rows: int) -> list[tuple[str, str]]:
    """label,review rows (the label first, the text not called "text")."""
    words = {"pos": "great lovely fine good", "neg": "awful bad poor terrible"}
    pairs = []
    for i in range(rows):
        label = "pos" if i % 2 else "neg"
        pairs.append((label, f"this film was {words[label].split()[i % 4]} #{i}"))
    path.write_text("label,review\n" + "".join(f"{y},{x}\n" for y, x in pairs), encoding="utf-8")
    return pairs


@pytest.fixture(scope="module")
def text_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A text project trained (a few steps) on label,review CSV rows with data.target=label:
    (project, its checkpoint, a folder for inputs)."""
    where = tmp_path_factory.mktemp("text")
    project = generate(where, TEXT_PKG, task="sequence-classification", model="rnn", dataset="text")
    data = where / "reviews.csv"
    write_reviews(data, 64)
    result = run_in_project(
        project,
        "-m",
        TEXT_PKG,
        "train",
        *("--set", f"data.root={data}", "--set", "data.target=label"),
        *("--set", "train.max_steps=4", "--set", "train.batch_size=8"),
    )
    assert result.returncode == 0, result.stderr
    return project, project / "runs" / "default" / "last.pt", where


def predict(project: Path, checkpoint: Path, *inputs: Path) -> list[dict]:
    result = run_in_project(
        project, "-m", TEXT_PKG, "predict", "--checkpoint", str(checkpoint), *map(str, inputs)
    )
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.slow
def test_text_predict_reads_the_columns_and_lines_training_reads(text_run) -> None:
    project, checkpoint, where = text_run
    pairs = write_reviews(where / "new.csv", 6)
    (where / "new.csv").write_text((where / "new.csv").read_text() + "\n\n")  # blank lines
    texts = [text for _, text in pairs]
    (where / "new.txt").write_text("\n".join(texts) + "\n\n", encoding="utf-8")
    lines = "".join(json.dumps({"label": y, "review": x}) + "\n" for y, x in pairs)
    (where / "new.jsonl").write_text(lines + "\n", encoding="utf-8")
    # the same texts without labels, the one column under its training name, with a BOM
    (where / "bare.csv").write_text("\ufeffreview\n" + "\n".join(texts) + "\n", encoding="utf-8")
    inputs = [where / name for name in ("new.txt", "new.csv", "new.jsonl", "bare.csv")]
    records = predict(project, checkpoint, *inputs)
    by_file = {path: [r for r in records if r["input"] == str(path)] for path in inputs}
    assert [len(found) for found in by_file.values()] == [6, 6, 6, 6]
    expected = [(r["row"], r["top_k"]) for r in by_file[inputs[0]]]  # the texts alone
    for path in inputs[1:]:  # the review column, not the labels, of every file
        assert [(r["row"], r["top_k"]) for r in by_file[path]] == expected, path


@pytest.mark.slow
def test_resume_with_changed_settings_refuses_or_applies_and_says_so(
    text_run, tmp_path: Path
) -> None:
    project, checkpoint, where = text_run
    out = tmp_path / "run"
    shutil.copytree(checkpoint.parent, out)
    saved = torch.load(out / "last.pt", weights_only=True)["config"]
    last, recorded = (out / "last.pt").read_bytes(), (out / "config.toml").read_text()
    same = f"train.resume=auto data.root={where / 'reviews.csv'} data.target=label"
    same += " train.batch_size=8"
    changes = {
        "train.lr": "0.5",  # the restored schedule went on with the old one
        "train.scheduler": "constant",
        "data.val_fraction": "0.5",  # would move validation rows into training
        "train.seed": "7",
        "train.weight_decay": "0.5",  # the restored optimizer holds it
    }
    said = train_errors(project, TEXT_PKG, out, *(f"{same} {k}={v}" for k, v in changes.items()))
    for message, key in zip(said, changes, strict=True):
        section, name = key.split(".")
        assert f"--set {key}={saved[section][name]}" in message, message  # the fix to paste
        assert "train.out_dir" in message  # or a new run
    assert (out / "last.pt").read_bytes() == last and (out / "config.toml").read_text() == recorded
    sets = [
        arg for s in f"{same} train.max_steps=6 train.epochs=20".split() for arg in ("--set", s)
    ]
    result = run_in_project(
        project, "-m", TEXT_PKG, "train", "--set", f"train.out_dir={out}", *sets
    )
    assert result.returncode == 0, result.stderr
    assert "resuming with changed settings, applied: train.epochs: 10 -> 20" in result.stdout
    assert "train.max_steps: 4 -> 6" in result.stdout and "cosine schedule spans" in result.stdout
    config = tomllib.loads((out / "config.toml").read_text())["train"]
    assert (config["max_steps"], config["epochs"], config["lr"]) == (6, 20, saved["train"]["lr"])
    assert torch.load(out / "last.pt", weights_only=True)["step"] == 6


# Validation samples fetched slowly (each one noted in $EVAL_LOG): a signal lands mid-evaluation.
SLOW_VALIDATION = """
import os
import time

from . import DataBundle
from ._synthetic import SyntheticOptions as Options, make_splits


class Slow:
    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        with open(os.environ.get("EVAL_LOG", os.devnull), "a") as log:
            log.write(f"{index}\\n")
        time.sleep(0.03)
        return self.dataset[index]


def build(cfg, seed, state=None) -> DataBundle:
    train, val, spec = make_splits(cfg, seed)
    return DataBundle(train, Slow(val), spec)
"""


@pytest.mark.slow
def test_sigterm_during_evaluation_stops_after_its_batch_without_another_step(
    tmp_path: Path,
) -> None:
    project = generate(tmp_path, "evalstop")
    (project / "src" / "evalstop" / "data" / "slowval.py").write_text(SLOW_VALIDATION)
    log, out = tmp_path / "eval.log", tmp_path / "run"
    sets = ["data.name=slowval", "data.num_samples=384", "data.image_size=16", "train.epochs=2"]
    sets += ["train.batch_size=32", "train.eval_batch_size=4", f"train.out_dir={out}"]
    env = dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1", EVAL_LOG=str(log))
    command = [sys.executable, "-m", "evalstop", "train"]
    run = subprocess.Popen(
        [*command, *(arg for s in sets for arg in ("--set", s))],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (log.exists() and log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)  # until the first evaluation fetches its first sample
    run.send_signal(signal.SIGTERM)
    stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == 128 + signal.SIGTERM, stderr
    fetched = len(log.read_text().splitlines())
    assert fetched <= 12, fetched  # the batch at hand (4 samples), not all 96
    assert "SIGTERM: stopped at epoch 1, step 12" in stdout
    checkpoint = torch.load(out / "last.pt", weights_only=True)
    assert (checkpoint["step"], checkpoint["batch_in_epoch"]) == (12, 12)  # no step after it
    resumed = run_in_project(
        project,
        "-m",
        "evalstop",
        "train",
        "--set",
        "train.resume=auto",
        *(arg for s in sets if not s.startswith("train.epochs") for arg in ("--set", s)),
        "--set",
        "train.epochs=1",
    )
    assert resumed.returncode == 0, resumed.stderr  # the epoch's evaluation, then the end
    assert "epoch 1/1 step 12" in resumed.stdout
