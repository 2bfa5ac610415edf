"""Issue 20, runs you can leave alone: early stopping whose state survives a kill, a clean
stop on SIGTERM / Ctrl-C that resumes bit-identically, every optimizer and schedule
resuming exactly, and class weights / a balanced sampler, on a generated project.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from helpers import SLOW_DATASET, generate, kill_tree

pytestmark = pytest.mark.slow

PKG = "stop_proj"
# 8 steps per epoch; patience 2 with a min_delta no accuracy can beat stops after epoch 3
EARLY = [
    "data.name=slowsynthetic",
    "data.num_samples=64",
    "data.image_size=8",
    "model.width=4",
    "train.batch_size=8",
    "train.epochs=5",
    "train.device=cpu",
    "train.checkpoint_every=3",
    "train.log_every=1",
    "train.early_stopping_patience=2",
    "train.early_stopping_min_delta=1.0",
]

# A synthetic dataset whose training split is 3/4 class 0 (for class weights and sampling).
SKEWED = """
import torch

from . import DataBundle, TensorDictDataset
from ._synthetic import SyntheticOptions as Options, make_splits


def build(cfg, seed, state=None) -> DataBundle:
    train, val, spec = make_splits(cfg, seed)
    targets = train.targets.clone()
    targets[: 3 * len(targets) // 4] = 0
    return DataBundle(TensorDictDataset(train.inputs, targets), val, spec)
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # optim: every optimizer and schedule; imbalance: class weights and the balanced sampler
    features = ("optim", "imbalance")
    path = generate(tmp_path_factory.mktemp("stopping"), name="stop-proj", features=features)
    (path / "src" / PKG / "data" / "slowsynthetic.py").write_text(SLOW_DATASET)
    (path / "src" / PKG / "data" / "skewed.py").write_text(SKEWED)
    return path


def env(project: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")


def command(out: Path, *sets: str) -> list[str]:
    args = [a for s in [*EARLY, f"train.out_dir={out}", *sets] for a in ("--set", s)]
    return [sys.executable, "-m", PKG, "train", *args]


def run(project: Path, cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, cwd=project, env=env(project), capture_output=True, text=True, timeout=600
    )


def start(project: Path, cmd: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        cmd,
        cwd=project,
        env=env(project),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(proc: subprocess.Popen[str], ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 300
    while not ready():
        assert proc.poll() is None, "training ended too early: " + proc.communicate()[1]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def train_rows(out: Path) -> int:
    path = out / "metrics.csv"
    return path.read_text().count(",train,") if path.exists() else 0


def checkpoint(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)


def assert_same_weights(path: Path, reference: Path) -> None:
    got, want = checkpoint(path)["model_state_dict"], checkpoint(reference)["model_state_dict"]
    assert [k for k in want if not torch.equal(got[k], want[k])] == []


@pytest.fixture(scope="module")
def reference(project: Path) -> Path:
    """An uninterrupted run: it stops early after epoch 3 (step 24) of 5."""
    out = project / "runs" / "reference"
    result = run(project, command(out))
    assert result.returncode == 0, result.stderr
    assert "early stopping: no improvement of accuracy in 2 evaluations" in result.stdout
    saved = checkpoint(out / "last.pt")
    assert (saved["epoch"], saved["step"], saved["evals_without_improvement"]) == (3, 24, 2)
    again = run(project, command(out, "train.resume=auto"))  # a stopped run stays stopped
    assert again.returncode == 0 and checkpoint(out / "last.pt")["step"] == 24
    return out / "last.pt"


def test_early_stopping_state_survives_a_kill(
    project: Path, reference: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    proc = start(project, command(out))
    try:  # step 18 is in epoch 3: one evaluation without improvement is in that checkpoint
        wait_for(proc, lambda: (out / "step-00000018.pt").exists())
    finally:
        kill_tree(proc)  # its DataLoader workers too, gone before the resume takes the lock
        proc.communicate()
    assert checkpoint(out / "last.pt")["evals_without_improvement"] == 1
    resumed = run(project, command(out, "train.resume=auto"))
    assert resumed.returncode == 0, resumed.stderr
    assert "early stopping" in resumed.stdout
    assert checkpoint(out / "last.pt")["step"] == 24  # not 32: the count was not lost
    assert_same_weights(out / "last.pt", reference)


def test_sigterm_mid_epoch_with_workers_stops_cleanly_and_resumes_bit_identical(
    project: Path, reference: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    proc = start(project, command(out, "data.num_workers=2"))
    wait_for(proc, lambda: train_rows(out) >= 11)  # in epoch 2
    proc.send_signal(signal.SIGTERM)  # to the training process alone, as a scheduler does
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    saved = checkpoint(out / "last.pt")
    assert 0 < saved["batch_in_epoch"] < 8, "the stop was not mid-epoch"
    step = saved["step"]
    assert f"SIGTERM: stopped at epoch 2, step {step}; continue with" in stdout
    assert "Traceback" not in stderr
    resumed = run(project, command(out, "data.num_workers=2", "train.resume=auto"))
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from {out / 'last.pt'} at epoch 2, step {step}" in resumed.stdout
    assert_same_weights(out / "last.pt", reference)


def test_first_ctrl_c_checkpoints_a_second_one_exits_at_once(project: Path, tmp_path: Path) -> None:
    once, twice = tmp_path / "once", tmp_path / "twice"
    proc = start(project, command(once))
    wait_for(proc, lambda: train_rows(once) >= 2)
    proc.send_signal(signal.SIGINT)
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert "SIGINT: stopped at epoch 1" in stdout
    assert checkpoint(once / "last.pt")["step"] >= 2
    proc = start(project, command(twice))
    wait_for(proc, lambda: train_rows(twice) >= 2)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.005)  # two signals sent at once reach Python's handler as one
    proc.send_signal(signal.SIGINT)  # within the same step (64 ms of loading alone)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert "stopped at" not in stdout
    assert stderr.strip().splitlines() == [
        "interrupted; continue a training run with --set train.resume=auto"
    ]


# Run in one process per sample: for each (optimizer, schedule), an uninterrupted run of
# 3 epochs and one stopped at step 11 (mid-epoch 2, after the epoch-1 evaluation) and
# continued; prints, per combination, whether weights and learning rate agree, and the lr.
COMBINATIONS = """
import json, sys
import torch
from {pkg}.config import load_config
from {pkg}.train import fit

SAMPLE = [
    ["train.optimizer=sgd", "train.nesterov=true", "train.scheduler=onecycle"],
    ["train.optimizer=adam", "train.scheduler=step", "train.lr_step_epochs=1"],
    ["train.optimizer=adamw", "train.scheduler=plateau", "train.lr_patience=1"],
    ["train.optimizer=sgd", "train.momentum=0", "train.scheduler=constant"],
    ["train.optimizer=adamw", "train.scheduler=cosine", "train.warmup_steps=5"],
    ["train.optimizer=adam", "train.scheduler=plateau", "data.balanced_sampler=true",
     "train.class_weights=auto", "data.name=skewed"],
]
BASE = ["data.num_samples=64", "data.image_size=8", "model.width=4", "train.batch_size=8",
        "train.epochs=3", "train.device=cpu", "train.early_stopping_min_delta=1.0"]
out = sys.argv[1]
report = []
for i, sets in enumerate(SAMPLE):
    def go(name, *more):
        config = load_config(None, [*BASE, *sets, f"train.out_dir={{out}}/{{i}}-{{name}}", *more])
        fit(config)
        return torch.load(f"{{out}}/{{i}}-{{name}}/last.pt", weights_only=True)
    whole = go("whole")
    go("parts", "train.max_steps=11")
    parts = go("parts", "train.resume=auto")
    weights = all(torch.equal(whole["model_state_dict"][k], v)
                  for k, v in parts["model_state_dict"].items())
    lrs = [g["lr"] for c in (whole, parts) for g in c["optimizer_state_dict"]["param_groups"]]
    report.append({{"sets": sets, "same_weights": weights, "lrs": lrs, "step": parts["step"],
                   "class_weights": parts["class_weights"] is not None}})
print(json.dumps(report))
"""


def test_every_optimizer_and_schedule_resumes_exactly(project: Path, tmp_path: Path) -> None:
    script = COMBINATIONS.format(pkg=PKG)
    result = run(project, [sys.executable, "-c", script, str(tmp_path)])
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    for entry in report:
        assert entry["same_weights"], entry
        assert entry["step"] == 24, entry
        whole_lr, parts_lr = entry["lrs"]
        assert whole_lr == parts_lr, entry
    lrs = {" ".join(entry["sets"]): entry["lrs"][0] for entry in report}
    assert lrs[" ".join(report[1]["sets"])] == pytest.approx(1e-3 * 0.1**3)  # step: 3 drops
    assert lrs[" ".join(report[2]["sets"])] == pytest.approx(1e-3 * 0.1**2)  # plateau: 2
    assert lrs[" ".join(report[3]["sets"])] == 1e-3  # constant
    assert report[5]["class_weights"] and not report[0]["class_weights"]


SAMPLER = """
import json
import torch
from {pkg}.config import load_config
from {pkg}.data import build_data, build_loaders
from {pkg}.runtime import DistInfo
from {pkg}.imbalance import balance
from {pkg}.tasks import get_task

config = load_config(None, ["data.name=skewed", "data.num_samples=400", "data.image_size=8",
                            "data.balanced_sampler=true", "train.class_weights=auto"])
bundle = build_data(config.data, 0)
targets = bundle.train_targets()
task = get_task(config.task).for_data(bundle.spec, bundle.state)
task, weights = balance(task, config, bundle.train_targets, None, torch.device("cpu"))
def drawn(info):
    _, _, sampler = build_loaders(bundle, config, info, torch.device("cpu"), weights)
    sampler.set_epoch(3)
    return list(sampler)
one = drawn(DistInfo())
ranks = [drawn(DistInfo(rank=r, world_size=2)) for r in (0, 1)]
resumed = build_loaders(bundle, config, DistInfo(), torch.device("cpu"), weights)[2]
resumed.set_epoch(3, skip=100)
print(json.dumps({{
    "share_of_class_0": targets.eq(0).float().mean().item(),
    "drawn_share_of_class_0": targets[one].eq(0).float().mean().item(),
    "num_classes": int(targets.max()) + 1,
    "class_weights": task.class_weights.tolist(),
    "counts": torch.bincount(targets).tolist(),
    "ranks_split_one_draw": sorted(ranks[0] + ranks[1]) == sorted(one),
    "rank_0_is_every_other": ranks[0] == one[0::2],
    "resume_skips_exactly": list(resumed) == one[100:],
}}))
"""


def test_class_weights_and_balanced_sampler(project: Path) -> None:
    result = run(project, [sys.executable, "-c", SAMPLER.format(pkg=PKG)])
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["share_of_class_0"] > 0.75
    # each of 10 classes equally likely: class 0 near 1/10 instead of over 3/4
    assert 0.05 < got["drawn_share_of_class_0"] < 0.17, got
    n, k = sum(got["counts"]), got["num_classes"]
    assert got["class_weights"] == pytest.approx([n / (k * c) for c in got["counts"]])
    assert got["ranks_split_one_draw"] and got["rank_0_is_every_other"]
    assert got["resume_skips_exactly"]
