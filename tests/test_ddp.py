"""Issue 8: the generated `train` under torchrun (DDP), on CPU with gloo.

Two processes train, checkpoint once (rank 0), log once, and the checkpoint evaluates in
a single process; 2 ranks x batch B equal one process x batch 2B; a SIGKILLed DDP run
resumes exactly, and so does one stopped by SIGTERM (issue 20); two "nodes" rendezvous
over c10d on loopback.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import SLOW_DATASET, generate, kill_tree_once
from torch.utils.data import DistributedSampler

pytestmark = pytest.mark.slow

PKG = "ddp_proj"
STEPS_PER_EPOCH = 6  # 96 samples / (2 ranks x 8)
BASE = [
    "--set", "data.name=slowsynthetic",
    "--set", "model.name=tinymlp",  # no batch norm, no dropout: DDP == one big batch
    "--set", "data.num_samples=96",
    "--set", "data.image_size=8",
    "--set", "model.width=16",
    "--set", "train.epochs=3",
    "--set", "train.device=cpu",
    "--set", "train.checkpoint_every=3",
    "--set", "train.log_every=2",
]  # fmt: skip

TINY_MLP = """
from dataclasses import dataclass

import torch
from torch import nn

from ..config import ModelConfig, option


@dataclass
class Options(ModelConfig):
    width: int = option(16, "hidden units")


class TinyMLP(nn.Module):
    def __init__(self, size: int, width: int, outputs: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(size, width), nn.ReLU(), nn.Linear(width, outputs))

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.layers(inputs.flatten(1))  # (B, outputs)


def build(cfg, spec):
    return TinyMLP(spec.in_channels * spec.image_size**2, cfg.width, spec.num_outputs)
"""

# tinymlp whose 4th training forward pass returns NaN on rank 1 only.
NAN_ON_RANK_1 = """
import torch
import torch.distributed as dist

from .tinymlp import Options, build as build_mlp


class NaNOnRank1(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner, self.calls = inner, 0

    def forward(self, inputs):
        out = self.inner(inputs)
        if self.training:
            self.calls += 1
            if self.calls == 4 and dist.get_rank() == 1:
                out = out * float("nan")
        return out


def build(cfg, spec):
    return NaNOnRank1(build_mlp(cfg, spec))
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = generate(tmp_path_factory.mktemp("ddp"), name="ddp-proj")
    (path / "src" / PKG / "models" / "tinymlp.py").write_text(TINY_MLP)
    (path / "src" / PKG / "models" / "nanrank1.py").write_text(NAN_ON_RANK_1)
    (path / "src" / PKG / "data" / "slowsynthetic.py").write_text(SLOW_DATASET)
    return path


def command(launcher: list[str], out: Path, *sets: str) -> list[str]:
    args = [*BASE, "--set", f"train.out_dir={out}", *[a for s in sets for a in ("--set", s)]]
    return [sys.executable, *launcher, "-m", PKG, "train", *args]


def torchrun(*options: str) -> list[str]:
    return ["-m", "torch.distributed.run", *options]


STANDALONE = torchrun("--standalone", "--nproc_per_node=2")


def env(project: Path) -> dict[str, str]:
    # One intra-op thread per process: no oversubscription, and float sums that do not
    # depend on the thread count.
    return dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")


def run(project: Path, cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, cwd=project, env=env(project), capture_output=True, text=True, timeout=600
    )


def launch(project: Path, out: Path, **options: Any) -> subprocess.Popen:
    """A 2-process run of batch 8 per rank into `out`, started in the background."""
    cmd = command(STANDALONE, out, "train.batch_size=8")
    return subprocess.Popen(cmd, cwd=project, **{"env": env(project), **options})


def model_state(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=True)["model_state_dict"]


@pytest.fixture(scope="module")
def ddp_run(project: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """An uninterrupted 2-process run: 3 epochs x 6 steps, per-rank batch 8."""
    out = project / "runs" / "ddp"
    result = run(project, command(STANDALONE, out, "train.batch_size=8"))
    assert result.returncode == 0, result.stdout + result.stderr
    return out, result


def test_torchrun_trains_checkpoints_once_and_evaluates_in_one_process(
    project: Path, ddp_run: tuple[Path, subprocess.CompletedProcess[str]]
) -> None:
    out, result = ddp_run
    assert sorted(p.name for p in out.iterdir() if p.name != ".lock") == [
        "MODEL_CARD.md", "best.pt", "config.toml", "last.pt", "metrics.csv",
        "step-00000015.pt", "step-00000018.pt",
    ]  # fmt: skip
    assert result.stdout.count("epoch 1/3") == 1  # rank 0 alone prints
    rows = list(csv.DictReader(open(out / "metrics.csv", encoding="utf-8")))
    keys = Counter((row["step"], row["split"]) for row in rows)
    assert keys and max(keys.values()) == 1, keys
    assert [r["step"] for r in rows if r["split"] == "val"] == ["6", "12", "18"]
    checkpoint = torch.load(out / "last.pt", weights_only=True)
    assert checkpoint["step"] == 3 * STEPS_PER_EPOCH
    assert not any(k.startswith(("module.", "_orig_mod.")) for k in checkpoint["model_state_dict"])
    evaluate = [sys.executable, "-m", PKG, "evaluate", "--checkpoint", str(out / "last.pt")]
    evaluated = run(project, [*evaluate, "--json"])
    assert evaluated.returncode == 0, evaluated.stderr
    metrics = json.loads(evaluated.stdout.strip().splitlines()[-1])
    assert metrics["num_samples"] == 96 // 4  # every validation sample exactly once
    val_rows = [r for r in rows if r["split"] == "val"]
    assert abs(float(val_rows[-1]["loss"]) - metrics["loss"]) < 1e-4  # DDP eval == one process


def test_two_ranks_of_batch_b_equal_one_process_of_batch_2b(
    project: Path, ddp_run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    # "Same data order": DistributedSampler deals one shuffled permutation round-robin, so
    # step k's batches on ranks 0 and 1 together are exactly step k's batch of 2B samples
    # of a single process using the same permutation (only the order inside differs).
    for epoch in range(3):
        ranks = [DistributedSampler(range(96), 2, r, seed=42, drop_last=True) for r in (0, 1)]
        single = DistributedSampler(range(96), 1, 0, seed=42, drop_last=True)
        for sampler in (*ranks, single):
            sampler.set_epoch(epoch)
        rank0, rank1, one = (list(s) for s in (*ranks, single))
        for k in range(STEPS_PER_EPOCH):
            union = rank0[8 * k : 8 * k + 8] + rank1[8 * k : 8 * k + 8]
            assert sorted(union) == sorted(one[16 * k : 16 * k + 16])
    out, _ = ddp_run
    single_run = run(project, command([], tmp_path / "one", "train.batch_size=16"))
    assert single_run.returncode == 0, single_run.stderr
    ddp, one = model_state(out / "last.pt"), model_state(tmp_path / "one" / "last.pt")
    for name, value in one.items():
        torch.testing.assert_close(ddp[name], value, rtol=1e-5, atol=1e-6)  # measured: 1.5e-8


SAME_ORDER = """
from torch.utils.data import DistributedSampler

from ddp_proj.data import ResumableSampler
from ddp_proj.runtime import DistInfo

for size, ranks in ((96, 2), (1001, 3), (7, 1)):
    for rank in range(ranks):
        info = DistInfo(rank=rank, world_size=ranks)
        ours = ResumableSampler(range(size), info, seed=42)
        theirs = DistributedSampler(range(size), ranks, rank, seed=42, drop_last=True)
        for epoch, skip in ((0, 0), (3, 5)):
            ours.set_epoch(epoch, skip)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs)[skip:], (size, ranks, rank, epoch)
            assert len(ours) == len(theirs) - skip
print("same")
"""


def test_resumable_sampler_deals_distributed_samplers_order(project: Path) -> None:
    # The test above reasons with DistributedSampler; the project's sampler draws the same
    # order from tensors a chunk at a time (no list of every index), skipping on resume.
    result = run(project, [sys.executable, "-c", SAME_ORDER])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "same"


def test_gradient_accumulation_under_ddp_equals_the_bigger_batch(
    project: Path, ddp_run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    # Per rank, batches 2j and 2j+1 of 4 are exactly batch j of 8: the same samples per step.
    out = tmp_path / "accum"
    cmd = command(STANDALONE, out, "train.batch_size=4", "train.grad_accum_steps=2")
    result = run(project, cmd)
    assert result.returncode == 0, result.stdout + result.stderr
    assert torch.load(out / "last.pt", weights_only=True)["step"] == 3 * STEPS_PER_EPOCH
    reference, accumulated = model_state(ddp_run[0] / "last.pt"), model_state(out / "last.pt")
    for name, value in reference.items():
        torch.testing.assert_close(accumulated[name], value, rtol=1e-5, atol=1e-6)


def test_sigkilled_ddp_run_resumes_on_every_rank_exactly(
    project: Path, ddp_run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    proc = launch(project, out, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_tree_once(proc, out / "step-00000006.pt")
    killed_at = torch.load(out / "last.pt", weights_only=True)["step"]
    assert 6 <= killed_at < 3 * STEPS_PER_EPOCH
    resumed = run(project, command(STANDALONE, out, "train.batch_size=8", "train.resume=auto"))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert resumed.stdout.count(f"resuming from {out / 'last.pt'}") == 1
    reference, got = model_state(ddp_run[0] / "last.pt"), model_state(out / "last.pt")
    assert all(torch.equal(got[name], reference[name]) for name in reference)


def test_nan_on_one_rank_stops_every_rank_and_keeps_the_good_checkpoint(
    project: Path, tmp_path: Path
) -> None:
    # Losses are all-reduced before the finiteness check, so rank 0 (whose own loss is
    # finite) stops at the same step as rank 1 instead of waiting for it forever.
    out = tmp_path / "run"
    cmd = command(STANDALONE, out, "train.batch_size=8", "model.name=nanrank1")
    result = subprocess.run(
        cmd, cwd=project, env=env(project), capture_output=True, text=True, timeout=300
    )
    assert result.returncode != 0
    # Both ranks report it; their stderr lines may interleave, so count the messages.
    assert result.stderr.count("error: non-finite loss (nan) at step 4") == 2, result.stderr
    last = torch.load(out / "last.pt", weights_only=True)
    assert last["step"] == 3
    assert all(t.isfinite().all() for t in last["model_state_dict"].values())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_nodes_rendezvous_on_loopback_train_and_checkpoint(
    project: Path, tmp_path: Path
) -> None:
    out, port = tmp_path / "run", free_port()
    nodes = [
        subprocess.Popen(
            command(
                torchrun(
                    "--nnodes=2",
                    "--nproc_per_node=1",
                    f"--node-rank={rank}",
                    "--rdzv-backend=c10d",
                    f"--rdzv-endpoint=127.0.0.1:{port}",
                    "--rdzv-id=ptgen-two-nodes",
                ),
                out,
                "train.batch_size=8",
                "train.epochs=1",
            ),
            cwd=project,
            env=env(project),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in (0, 1)
    ]
    outputs = [node.communicate(timeout=600)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], "\n".join(outputs)
    checkpoint = torch.load(out / "last.pt", weights_only=True)
    assert checkpoint["step"] == STEPS_PER_EPOCH  # 96 samples over 2 processes x 8
    assert sum(o.count("epoch 1/1") for o in outputs) == 1


def test_sigterm_to_torchrun_stops_every_rank_at_one_step_and_resumes_exactly(
    project: Path, ddp_run: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    # torchrun passes SIGTERM on to both processes; they may see it at different steps,
    # but the stop flag is all-reduced at every step, so both stop after the same one.
    out = tmp_path / "run"
    # 0.24 s a batch: the signal (sent at step 8) lands before the epoch's last step (12),
    # also when torchrun forwards it late on a busy machine
    slow = {**env(project), "SLOW_SAMPLE_S": "0.03"}
    proc = launch(project, out, env=slow, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    metrics, deadline = out / "metrics.csv", time.monotonic() + 300
    while not (metrics.exists() and metrics.read_text().count(",train,") >= 4):  # step 8
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    saved = torch.load(out / "last.pt", weights_only=True)
    assert saved["batch_in_epoch"] > 0 and saved["step"] < 3 * STEPS_PER_EPOCH
    epoch = saved["epoch"] + 1
    assert stdout.count(f"SIGTERM: stopped at epoch {epoch}, step {saved['step']};") == 1, stdout
    resumed = run(project, command(STANDALONE, out, "train.batch_size=8", "train.resume=auto"))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    reference, got = model_state(ddp_run[0] / "last.pt"), model_state(out / "last.pt")
    assert all(torch.equal(got[name], reference[name]) for name in reference)
