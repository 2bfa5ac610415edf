"""Issue 5: checkpoints you can trust, proven on a generated project.

Exactness: a training process killed with SIGKILL (or stopped at max_steps) and resumed
ends with weights bit-identical to an uninterrupted run. Damaged or foreign files are
refused with one line naming the file and the reason. A NaN loss stops with the step.
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import NAN_MODEL, SLOW_DATASET, generate, kill_tree_once
from PIL import Image

from ptgen.components import add_component

PKG = "resume_proj"
STEPS = 20  # 8 steps per epoch: the runs cross two epoch boundaries and stop mid-epoch
BASE = [
    "--set", "data.name=slowsynthetic",
    "--set", "data.num_samples=64",
    "--set", "data.image_size=16",
    "--set", "model.width=8",
    "--set", "train.batch_size=8",
    "--set", "train.epochs=3",
    "--set", "train.device=cpu",
    "--set", "train.checkpoint_every=3",
    "--set", "train.log_every=4",
]  # fmt: skip

# The image-folder kind with its training split fetched slowly (slowsynthetic's wrapper,
# which passes `set_epoch` on, so the augmentation follows the epoch).
SLOW_IMAGES = """
from .images import Options, build as build_images
from .slowsynthetic import Slow


def build(cfg, seed, state=None):
    bundle = build_images(cfg, seed, state)
    bundle.train = Slow(bundle.train)
    return bundle
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = generate(tmp_path_factory.mktemp("resume"), name="resume-proj")
    (path / "src" / PKG / "data" / "slowsynthetic.py").write_text(SLOW_DATASET)
    (path / "src" / PKG / "models" / "nanmodel.py").write_text(NAN_MODEL)
    add_component(path, "dataset", "images", "image-folder")
    (path / "src" / PKG / "data" / "slowimages.py").write_text(SLOW_IMAGES)
    return path


def run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m PKG ARGS`; one intra-op thread, as float sums depend on the thread count."""
    return subprocess.run(
        [sys.executable, "-m", PKG, *args],
        cwd=project,
        env=dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1"),
        capture_output=True,
        text=True,
        timeout=600,
    )


def train(project: Path, out: Path, *sets: str) -> subprocess.CompletedProcess[str]:
    args = [*BASE, "--set", f"train.out_dir={out}", *[a for s in sets for a in ("--set", s)]]
    return run(project, "train", *args)


def weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=True)["model_state_dict"]


def assert_bit_identical(path: Path, reference: Path) -> None:
    got, want = weights(path), weights(reference)
    assert got.keys() == want.keys()
    different = [name for name in want if not torch.equal(got[name], want[name])]
    assert not different, f"{path} differs from {reference} in {different}"


@pytest.fixture(scope="module")
def reference(project: Path) -> Path:
    """An uninterrupted run of STEPS steps."""
    out = project / "runs" / "reference"
    result = train(project, out, f"train.max_steps={STEPS}")
    assert result.returncode == 0, result.stderr
    assert torch.load(out / "last.pt", weights_only=True)["step"] == STEPS
    return out / "last.pt"


def kill_after_checkpoint(
    project: Path, out: Path, step: int, workers: int, extra: list[str] | None = None
) -> None:
    """Start training, SIGKILL it as soon as the step-`step` checkpoint exists."""
    args = [*BASE, "--set", f"train.out_dir={out}", "--set", f"data.num_workers={workers}"]
    args += ["--set", f"train.max_steps={STEPS}", *[a for s in extra or [] for a in ("--set", s)]]
    env = dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", PKG, "train", *args],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    kill_tree_once(proc, out / f"step-{step:08d}.pt")  # the DataLoader workers too
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.slow
@pytest.mark.parametrize("workers", [0, 2])
def test_sigkill_then_resume_is_bit_identical(
    project: Path, reference: Path, tmp_path: Path, workers: int
) -> None:
    out = tmp_path / "run"
    kill_after_checkpoint(project, out, step=9, workers=workers)
    killed_at = torch.load(out / "last.pt", weights_only=True)["step"]
    assert 9 <= killed_at < STEPS
    resumed = train(
        project, out, "train.resume=auto", f"data.num_workers={workers}", f"train.max_steps={STEPS}"
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from {out / 'last.pt'}" in resumed.stdout
    assert torch.load(out / "last.pt", weights_only=True)["step"] == STEPS
    assert_bit_identical(out / "last.pt", reference)
    rows = list(csv.DictReader(open(out / "metrics.csv", encoding="utf-8")))
    keys = [(int(row["step"]), row["split"]) for row in rows]  # rows past the kill were dropped
    assert keys == sorted(set(keys), key=lambda k: (k[0], k[1] == "val")), keys


@pytest.fixture(scope="module")
def augmented(project: Path) -> list[str]:
    """Settings for a real image folder (64 noise images in 4 classes) with data.augment."""
    root = project / "images"
    for i in range(80):
        split, label = "val" if i % 5 == 0 else "train", f"c{i % 4}"
        (root / split / label).mkdir(parents=True, exist_ok=True)
        Image.effect_noise((20, 20), 40 + i).convert("RGB").save(root / split / label / f"{i}.png")
    return ["data.name=slowimages", f"data.root={root}", "data.augment=standard"]


@pytest.mark.slow
def test_sigkill_then_resume_with_augmentation_and_workers_is_bit_identical(
    project: Path, augmented: list[str], tmp_path: Path
) -> None:
    """Augmentation is drawn from (seed, epoch, sample index): an uninterrupted run in one
    process and a run killed mid-epoch and resumed with 2 workers end bit-identical."""
    reference = train(
        project,
        tmp_path / "reference",
        *augmented,
        "data.num_workers=0",
        f"train.max_steps={STEPS}",
    )
    assert reference.returncode == 0, reference.stderr
    out = tmp_path / "run"
    kill_after_checkpoint(project, out, step=9, workers=2, extra=augmented)
    assert 9 <= torch.load(out / "last.pt", weights_only=True)["step"] < STEPS
    resumed = train(
        project,
        out,
        *augmented,
        "train.resume=auto",
        "data.num_workers=2",
        f"train.max_steps={STEPS}",
    )
    assert resumed.returncode == 0, resumed.stderr
    assert_bit_identical(out / "last.pt", tmp_path / "reference" / "last.pt")
    plain = train(project, tmp_path / "plain", *augmented[:2], f"train.max_steps={STEPS}")
    assert plain.returncode == 0, plain.stderr
    name = "features.0.layers.0.weight"  # the augmentation did change the training
    assert not torch.equal(
        weights(tmp_path / "plain" / "last.pt")[name], weights(out / "last.pt")[name]
    )


@pytest.mark.slow
def test_stop_at_max_steps_then_continue_is_bit_identical(
    project: Path, reference: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    first = train(project, out, "train.max_steps=11")
    assert first.returncode == 0, first.stderr
    assert torch.load(out / "last.pt", weights_only=True)["step"] == 11
    more = train(project, out, "train.resume=auto", f"train.max_steps={STEPS}")  # allowed change
    assert more.returncode == 0, more.stderr
    assert "at epoch 2, step 11" in more.stdout
    assert_bit_identical(out / "last.pt", reference)


def test_a_finished_run_resumed_is_a_no_op_that_reports_its_result(
    project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    settings = ("data.name=synthetic", "train.max_steps=3")
    assert train(project, out, *settings).returncode == 0
    before = (out / "last.pt").read_bytes()

    again = train(project, out, *settings, "train.resume=auto")

    assert again.returncode == 0, again.stderr
    assert torch.load(out / "last.pt", weights_only=True)["step"] == 3  # not one step past
    assert (out / "last.pt").read_bytes() == before
    assert "nothing left to train (epoch 1, step 3)" in again.stdout and "accuracy" in again.stdout


@pytest.fixture(scope="module")
def good_run(project: Path) -> Path:
    """A short finished run: last.pt at step 5, step checkpoints at 2 and 4."""
    out = project / "runs" / "good"
    result = train(
        project, out, "data.name=synthetic", "train.max_steps=5", "train.checkpoint_every=2"
    )
    assert result.returncode == 0, result.stderr
    return out


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def damage(kind: str, good: Path, bad: Path) -> str:
    """Write a damaged/foreign checkpoint of `kind` to `bad`; returns the expected reason."""
    if kind == "truncated":
        data = good.read_bytes()
        bad.write_bytes(data[: len(data) // 2])
        return "not a readable checkpoint"
    if kind == "zero-byte":
        bad.write_bytes(b"")
        return "empty"
    if kind == "not-a-checkpoint":
        bad.write_text("step,loss\n1,2.3\n")
        return "not a readable checkpoint"
    if kind == "foreign-dict":
        torch.save({"weights": torch.zeros(3)}, bad)
        return "not a training checkpoint"
    torch.save({"model_state_dict": argparse.Namespace(evil=True)}, bad)  # needs unpickling
    return "arbitrary unpickling"


@pytest.mark.parametrize(
    "kind", ["truncated", "zero-byte", "not-a-checkpoint", "foreign-dict", "pickled-object"]
)
def test_damaged_checkpoint_is_refused_in_one_line(
    project: Path, good_run: Path, tmp_path: Path, kind: str
) -> None:
    bad = tmp_path / f"{kind}.pt"
    reason = damage(kind, good_run / "last.pt", bad)
    evaluated = run(project, "evaluate", "--checkpoint", str(bad))
    assert_one_line_error(evaluated, str(bad), reason)
    resumed = train(project, tmp_path / "out", f"train.resume={bad}", "data.name=synthetic")
    assert_one_line_error(resumed, str(bad), reason)


def test_checkpoint_of_another_width_is_refused_naming_the_key(
    project: Path, good_run: Path, tmp_path: Path
) -> None:
    path = good_run / "last.pt"
    result = train(
        project, tmp_path / "out", f"train.resume={path}", "model.width=16", "data.name=synthetic"
    )
    assert_one_line_error(result, str(path), "model.width 8 -> 16")


def test_mid_epoch_resume_with_another_batch_size_is_refused(
    project: Path, good_run: Path, tmp_path: Path
) -> None:
    path = good_run / "last.pt"  # step 5 of 8: mid-epoch
    result = train(
        project,
        tmp_path / "out",
        f"train.resume={path}",
        "train.batch_size=4",
        "data.name=synthetic",
    )
    assert_one_line_error(result, str(path), "global batch", "of 8, now 4")
    assert "--set train.batch_size=8" in result.stderr, result.stderr  # the fix, to paste


def test_state_dict_with_ddp_and_compile_prefixes_loads(
    project: Path, good_run: Path, tmp_path: Path
) -> None:
    checkpoint = torch.load(good_run / "last.pt", weights_only=True)
    assert not any(k.startswith(("module.", "_orig_mod.")) for k in checkpoint["model_state_dict"])
    state = checkpoint["model_state_dict"]
    checkpoint["model_state_dict"] = {f"module._orig_mod.{k}": v for k, v in state.items()}
    torch.save(checkpoint, tmp_path / "wrapped.pt")
    result = run(project, "evaluate", "--checkpoint", str(tmp_path / "wrapped.pt"), "--json")
    assert result.returncode == 0, result.stderr
    assert '"num_samples": 16' in result.stdout


def test_resume_auto_skips_a_damaged_newest_checkpoint(
    project: Path, good_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    for name in ("last.pt", "step-00000002.pt", "step-00000004.pt"):
        (out / name).write_bytes((good_run / name).read_bytes())
    (out / "last.pt").write_bytes((good_run / "last.pt").read_bytes()[:1000])  # truncated
    result = train(project, out, "train.resume=auto", "train.max_steps=6", "data.name=synthetic")
    assert result.returncode == 0, result.stderr
    assert f"warning: skipping damaged checkpoint {out / 'last.pt'}" in result.stderr
    assert f"resuming from {out / 'step-00000004.pt'} at epoch 1, step 4" in result.stdout
    assert torch.load(out / "last.pt", weights_only=True)["step"] == 6


def test_resume_auto_in_an_empty_dir_starts_fresh(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = train(project, out, "train.resume=auto", "train.max_steps=1", "data.name=synthetic")
    assert result.returncode == 0, result.stderr
    assert f"no checkpoint in {out}; starting a fresh run" in result.stdout


def test_nan_loss_stops_naming_the_step_and_keeps_the_last_good_checkpoint(
    project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    result = train(
        project, out, "model.name=nanmodel", "data.name=synthetic", "train.checkpoint_every=2"
    )
    assert_one_line_error(result, "non-finite loss", "step 5")
    last = torch.load(out / "last.pt", weights_only=True)
    assert last["step"] == 4
    assert all(t.isfinite().all() for t in last["model_state_dict"].values())
    assert sorted(p.name for p in out.glob("step-*.pt")) == ["step-00000002.pt", "step-00000004.pt"]


def test_nan_loss_with_warn_continues_but_never_saves_a_nonfinite_state(
    project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    result = train(
        project,
        out,
        "model.name=nanmodel",
        "data.name=synthetic",
        "train.checkpoint_every=2",
        "train.max_steps=8",
        "train.on_nonfinite=warn",
    )
    assert result.returncode == 0, result.stderr
    assert "non-finite loss" in result.stderr and "step 5" in result.stderr
    last = torch.load(out / "last.pt", weights_only=True)
    assert last["step"] == 4
    assert all(t.isfinite().all() for t in last["model_state_dict"].values())
