"""Issue 17: `train.strategy=fsdp` (FSDP2 + torch.distributed.checkpoint), on CPU with gloo.

Two processes shard the mlp (each hidden block, then the root) and write sharded
checkpoints (`*.dcp` directories). FSDP reaches DDP's weights; gradient accumulation and
gradient checkpointing compose with it; a SIGKILLed run resumes bit-identically; a
2-process checkpoint trains on in one process and back on two (resharded, close but not
bit-identical); the consolidated file evaluates in one process to the run's last loss,
which every rank computed over its own share of an uneven validation split.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import SLOW_DATASET, generate, kill_tree_once
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

pytestmark = pytest.mark.slow

PKG = "fsdp_proj"
STEPS = 18  # 3 epochs x 6 steps: 96 samples / (2 ranks x 8)
BASE = [
    "--set", "data.name=unevenval",
    "--set", "model.name=mlp",  # two hidden blocks, sharded one by one
    "--set", "model.dropout=0.0",  # no random masks: DDP and FSDP draw them differently
    "--set", "model.width=16",
    "--set", "data.num_samples=96",
    "--set", "data.image_size=8",
    "--set", "train.epochs=3",
    "--set", "train.device=cpu",
    "--set", "train.checkpoint_every=3",
    "--set", "train.log_every=2",
]  # fmt: skip
TWO = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]

# slowsynthetic with 17 validation samples: rank 0 validates 9 (two batches), rank 1 8
# (one), so under fsdp rank 1 must join rank 0's second weight gather without counting it.
UNEVEN_VALIDATION = """
from torch.utils.data import Subset

from . import DataBundle
from .slowsynthetic import Options, build as build_slow


def build(cfg, seed, state=None) -> DataBundle:
    bundle = build_slow(cfg, seed, state)
    return DataBundle(bundle.train, Subset(bundle.val, range(17)), bundle.spec)
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("fsdp")
    path = generate(where, name="fsdp-proj", model="mlp", features=("fsdp",))
    (path / "src" / PKG / "data" / "slowsynthetic.py").write_text(SLOW_DATASET)
    (path / "src" / PKG / "data" / "unevenval.py").write_text(UNEVEN_VALIDATION)
    return path


def command(launcher: list[str], out: Path, *sets: str) -> list[str]:
    args = [*BASE, "--set", f"train.out_dir={out}", *[a for s in sets for a in ("--set", s)]]
    return [sys.executable, *launcher, "-m", PKG, "train", *args]


def env(project: Path) -> dict[str, str]:
    # one intra-op thread: float sums that do not depend on the thread count
    return dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")


def run(project: Path, cmd: list[str]) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        cmd, cwd=project, env=env(project), capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def sharded_weights(directory: Path, tmp_path: Path) -> dict[str, torch.Tensor]:
    """The full model state of a .dcp directory, read by DCP itself (not the project)."""
    target = tmp_path / f"{directory.parent.name}-{directory.name}.pt"
    dcp_to_torch_save(directory, target)
    return torch.load(target, weights_only=True)["model"]


def step_of(directory: Path) -> int:
    return torch.load(directory / "state.pt", weights_only=True)["step"]


@pytest.fixture(scope="module")
def fsdp_run(project: Path) -> Path:
    """An uninterrupted 2-process fsdp run: 18 steps of per-rank batch 8."""
    out = project / "runs" / "fsdp"
    run(project, command(TWO, out, "train.batch_size=8", "train.strategy=fsdp"))
    return out


def test_fsdp_writes_sharded_checkpoints_reaches_ddps_weights_and_continues_ddps_run(
    project: Path, fsdp_run: Path, tmp_path: Path
) -> None:
    names = sorted(p.name for p in fsdp_run.iterdir() if p.name != ".lock")
    assert names == [
        "best.dcp", "config.toml", "last.dcp", "metrics.csv", "step-00000015.dcp",
        "step-00000018.dcp",
    ]  # fmt: skip
    assert sorted(p.name for p in (fsdp_run / "last.dcp").iterdir()) == [
        ".metadata", "__0_0.distcp", "__1_0.distcp", "state.pt"  # one shard file per rank
    ]  # fmt: skip
    assert step_of(fsdp_run / "last.dcp") == STEPS
    rows = list(csv.DictReader(open(fsdp_run / "metrics.csv", encoding="utf-8")))
    keys = [(row["step"], row["split"]) for row in rows]
    assert len(keys) == len(set(keys))  # rank 0 alone records
    assert [step for step, split in keys if split == "val"] == ["6", "12", "18"]
    ddp = tmp_path / "ddp"
    run(project, command(TWO, ddp, "train.batch_size=8", "train.strategy=ddp"))
    want = torch.load(ddp / "last.pt", weights_only=True)["model_state_dict"]
    got = sharded_weights(fsdp_run / "last.dcp", tmp_path)
    assert got.keys() == want.keys()
    for name, value in want.items():  # the same sums in another order: measured 6e-8
        torch.testing.assert_close(got[name], value, rtol=1e-5, atol=1e-6)
    # ddp's single-file checkpoint (mid-epoch, step 15) continues under fsdp
    switched = tmp_path / "switched"
    start = f"train.resume={ddp / 'step-00000015.pt'}"
    run(project, command(TWO, switched, "train.batch_size=8", "train.strategy=fsdp", start))
    got = sharded_weights(switched / "last.dcp", tmp_path)
    for name, value in want.items():
        torch.testing.assert_close(got[name], value, rtol=1e-5, atol=1e-6)


def test_accumulation_and_grad_checkpointing_under_fsdp_equal_the_bigger_batch(
    project: Path, fsdp_run: Path, tmp_path: Path
) -> None:
    # Per rank, batches 2j and 2j+1 of 4 are exactly batch j of 8; the first of the two
    # keeps its gradients unsharded (no reduce-scatter) until the second.
    out = tmp_path / "accum"
    sets = ["train.batch_size=4", "train.grad_accum_steps=2", "model.grad_checkpointing=true"]
    run(project, command(TWO, out, "train.strategy=fsdp", *sets))
    reference = sharded_weights(fsdp_run / "last.dcp", tmp_path)
    got = sharded_weights(out / "last.dcp", tmp_path)
    for name, value in reference.items():  # measured: 6e-8
        torch.testing.assert_close(got[name], value, rtol=1e-5, atol=1e-6)


def test_sigkilled_fsdp_run_resumes_bit_identically(
    project: Path, fsdp_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    cmd = command(TWO, out, "train.batch_size=8", "train.strategy=fsdp")
    proc = subprocess.Popen(
        cmd, cwd=project, env=env(project), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    kill_tree_once(proc, out / "step-00000006.dcp")
    assert 6 <= step_of(out / "last.dcp") < STEPS
    resumed = run(project, [*cmd, "--set", "train.resume=auto"])
    assert resumed.stdout.count(f"resuming from {out / 'last.dcp'}") == 1
    assert not list(out.glob(".*.tmp"))  # the killed run's half-written directory is gone
    got, want = (sharded_weights(d / "last.dcp", tmp_path) for d in (out, fsdp_run))
    assert all(torch.equal(got[name], want[name]) for name in want)


def test_a_two_process_checkpoint_trains_on_in_one_process_and_back_on_two(
    project: Path, fsdp_run: Path, tmp_path: Path
) -> None:
    # step 15 is mid-epoch: one process continues with the same global batch (1 x 16)
    out = tmp_path / "reshard"
    start = f"train.resume={fsdp_run / 'step-00000015.dcp'}"
    one = command([], out, "train.batch_size=16", "train.strategy=fsdp", start)
    run(project, [*one, "--set", "train.max_steps=16"])
    assert step_of(out / "last.dcp") == 16
    run(
        project, command(TWO, out, "train.batch_size=8", "train.strategy=fsdp", "train.resume=auto")
    )
    assert step_of(out / "last.dcp") == STEPS
    got, want = (sharded_weights(d / "last.dcp", tmp_path) for d in (out, fsdp_run))
    for name, value in want.items():  # the same training up to float sums: measured 7e-9
        torch.testing.assert_close(got[name], value, rtol=1e-5, atol=1e-6)


def test_consolidated_checkpoint_evaluates_in_one_process_to_the_runs_last_loss(
    project: Path, fsdp_run: Path, tmp_path: Path
) -> None:
    output = tmp_path / "model.pt"
    cmd = [sys.executable, "-m", PKG, "consolidate", "--checkpoint", str(fsdp_run / "last.dcp")]
    assert f"wrote {output}: step {STEPS}" in run(project, [*cmd, "--output", str(output)]).stdout
    saved = torch.load(output, weights_only=True)
    assert saved["step"] == STEPS and saved["optimizer_state_dict"]["state"]
    evaluate = [sys.executable, "-m", PKG, "evaluate", "--checkpoint", str(output), "--json"]
    metrics = json.loads(run(project, evaluate).stdout.strip().splitlines()[-1])
    rows = list(csv.DictReader(open(fsdp_run / "metrics.csv", encoding="utf-8")))
    last_val = [row for row in rows if row["split"] == "val"][-1]
    assert metrics["num_samples"] == 17
    assert abs(metrics["loss"] - float(last_val["loss"])) < 1e-5
    again = subprocess.run(
        [*cmd, "--output", str(output)], cwd=project, env=env(project), capture_output=True,
        text=True,
    )  # fmt: skip
    assert again.returncode == 1 and again.stderr.count("\n") == 1, again.stderr
    assert "already exists" in again.stderr


@pytest.mark.slow
def test_a_project_with_every_feature_trains_sharded(full_project: Path, tmp_path: Path) -> None:
    """Issue 29: `--with` every feature, then `torchrun --nproc_per_node=2 ... train.strategy=
    fsdp`. The ema feature's average is not sharded: fsdp refuses it, naming the setting
    that trains without it (train.ema_decay=0)."""
    out = tmp_path / "all"
    sets = ["train.strategy=fsdp", "train.max_steps=4", "data.num_samples=64", "model.width=8"]
    args = [a for s in [*sets, f"train.out_dir={out}"] for a in ("--set", s)]
    cmd = [sys.executable, *TWO, "-m", "demo_proj", "train", *args]
    refused = subprocess.run(cmd, cwd=full_project, env=env(full_project), capture_output=True)
    assert refused.returncode != 0 and b"--set train.ema_decay=0" in refused.stderr
    run(full_project, [*cmd, "--set", "train.ema_decay=0"])
    assert (out / "last.dcp").is_dir() and step_of(out / "last.dcp") == 4
