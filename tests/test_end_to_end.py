"""The user's path, for real: generate (with smoke), run the project's tests, train, evaluate."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from helpers import run_in_project, run_ptgen

pytestmark = pytest.mark.slow


def test_new_project_smokes_trains_and_evaluates(tmp_path: Path) -> None:
    result = run_ptgen("new", "project", "e2e-proj", "--output-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    for stage in ("train", "overfit", "evaluate", "checkpoint"):
        assert f"PASS {stage}" in result.stdout
    project = tmp_path / "e2e-proj"

    tests = run_in_project(project, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout + tests.stderr

    train = run_in_project(project, "-m", "e2e_proj", "train", "--set", "train.max_steps=20")
    assert train.returncode == 0, train.stderr
    run_dir = project / "runs" / "default"
    assert (run_dir / "last.pt").is_file() and (run_dir / "best.pt").is_file()
    rows = list(csv.DictReader(open(run_dir / "metrics.csv", encoding="utf-8")))
    assert max(int(row["step"]) for row in rows) == 20

    evaluate = run_in_project(
        project, "-m", "e2e_proj", "evaluate", "--checkpoint", str(run_dir / "last.pt"), "--json"
    )
    assert evaluate.returncode == 0, evaluate.stderr
    metrics = json.loads(evaluate.stdout.strip().splitlines()[-1])
    assert {"loss", "accuracy", "num_samples"} <= metrics.keys()
    assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["num_samples"] > 0


def test_training_into_an_existing_run_is_refused(default_project: Path) -> None:
    out = default_project.parent / "run-once"
    train = ["-m", "demo_proj", "train", "--set", "train.max_steps=2", "--set"]
    first = run_in_project(default_project, *train, f"train.out_dir={out}")
    assert first.returncode == 0, first.stderr
    second = run_in_project(default_project, *train, f"train.out_dir={out}")
    assert second.returncode == 1
    assert "train.resume=auto" in second.stderr and "Traceback" not in second.stderr
