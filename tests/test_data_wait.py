"""Issue 21: a run says when data is the bottleneck, and `data.num_workers = "auto"`.

The share of step time spent waiting for the next batch is in metrics.csv (`data_wait`,
host time around the loader's next(), no device sync); above 20% the run ends with one
line of advice. Measured on a generated project with a deliberately slow dataset.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import SLOW_DATASET, generate

PKG = "wait_proj"
SMALL = [
    "data.num_samples=64",
    "data.image_size=16",
    "model.width=8",
    "train.batch_size=8",
    "train.max_steps=12",
    "train.log_every=4",
    "train.device=cpu",
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = generate(tmp_path_factory.mktemp("wait"), name="wait-proj")
    (path / "src" / PKG / "data" / "slowsynthetic.py").write_text(SLOW_DATASET)
    return path


def train(project: Path, out: Path, *sets: str) -> subprocess.CompletedProcess[str]:
    args = [a for s in (*SMALL, f"train.out_dir={out}", *sets) for a in ("--set", s)]
    return subprocess.run(
        [sys.executable, "-m", PKG, "train", *args],
        cwd=project,
        env=dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1"),
        capture_output=True,
        text=True,
        timeout=600,
    )


def data_wait(out: Path) -> list[float]:
    rows = csv.DictReader(open(out / "metrics.csv", encoding="utf-8"))
    return [float(row["data_wait"]) for row in rows if row["split"] == "train"]


@pytest.mark.slow
def test_a_slow_dataset_shows_in_metrics_and_ends_with_advice(
    project: Path, tmp_path: Path
) -> None:
    slow = train(project, tmp_path / "slow", "data.name=slowsynthetic")
    assert slow.returncode == 0, slow.stderr
    shares = data_wait(tmp_path / "slow")
    assert len(shares) == 3 and all(share > 0.3 for share in shares), shares  # 64 ms a batch
    advice = [line for line in slow.stdout.splitlines() if "waiting for batches" in line]
    assert len(advice) == 1 and "raise data.num_workers" in advice[0], slow.stdout
    assert "data.num_workers=0" in advice[0]

    plain = train(project, tmp_path / "plain")  # the default synthetic data, in memory
    assert plain.returncode == 0, plain.stderr
    shares = data_wait(tmp_path / "plain")
    assert len(shares) == 3 and all(0 <= share < 0.2 for share in shares), shares
    assert "waiting for batches" not in plain.stdout
