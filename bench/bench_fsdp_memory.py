"""Memory per process under train.strategy=ddp and fsdp (issue 17).

A generated sequence-classification project's transformer (model.width=256,
model.depth=4: about 3.2 M parameters) trains a few steps of batch 8 per process, built
by the project's own `build_run` (so sharded exactly as `train` shards it): in one
process, then in 2 gloo processes (one thread each) under ddp and under fsdp. Each
process reports the bytes it holds of parameters, gradients (just before the optimizer
step) and AdamW state, and how far its peak resident memory (ru_maxrss) rose above the
level it had before the model was built (after `build_run`, and after the steps); the
table shows rank 0's figures and their ratios to the single process. Writes
bench/bench_fsdp_memory.json.

    python bench/bench_fsdp_memory.py
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.tensor import DTensor

from ptgen.project import ProjectOptions, new_project

PKG = "memproj"
STEPS = 4
MODEL = ["model.width=256", "model.depth=4", "model.num_heads=4", "model.dropout=0.0"]
TRAIN = ["train.batch_size=8", "train.device=cpu", "data.num_samples=256"]


def local_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes this process holds: a sharded (DTensor) tensor counts only its local shard."""
    held = (t.to_local() if isinstance(t, DTensor) else t for t in tensors)
    return sum(t.numel() * t.element_size() for t in held)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def measure(modules: dict[str, Any], overrides: list[str], rank: int, world: int) -> dict:
    """Build the run as `train` does, train STEPS steps, report what this process holds."""
    engine, runtime = modules["engine"], modules["runtime"]
    config = modules["config"].load_config(None, overrides)
    before = peak_rss_mib()
    run = modules["train"].build_run(config, runtime.DistInfo(rank, world), torch.device("cpu"))
    built = peak_rss_mib() - before  # the model is whole in each process until it is sharded
    grads, times = 0, []
    for _, batch in zip(range(STEPS), run.train_loader, strict=False):
        start = time.perf_counter()
        engine.forward_backward(run.train_model, batch, run.task, run.precision)
        grads = local_bytes(p.grad for p in run.model.parameters() if p.grad is not None)
        engine.optimizer_step(run.optimizer, run.precision.scaler, config.train.grad_clip)
        times.append(time.perf_counter() - start)
    state = [v for s in run.optimizer.state.values() for v in s.values() if v.dim() > 0]
    return {
        "parameters": sum(p.numel() for p in modules["models"].unwrap(run.model).parameters()),
        "param_bytes": local_bytes(run.model.parameters()),
        "grad_bytes": grads,
        "optimizer_bytes": local_bytes(state),
        "peak_rss_rise_after_build_mib": round(built, 1),
        "peak_rss_rise_mib": round(peak_rss_mib() - before, 1),
        "step_s": round(statistics.median(times[1:]), 4),  # noisy: a few steps, shared cores
    }


def worker(rank: int, world: int, src: str, port: int, strategy: str, out: str, queue) -> None:
    sys.path.insert(0, src)
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    names = ("config", "engine", "models", "runtime", "train")
    modules = {name: importlib.import_module(f"{PKG}.{name}") for name in names}
    sets = [*MODEL, *TRAIN, f"train.strategy={strategy}", f"train.out_dir={out}/{strategy}{world}"]
    queue.put((rank, measure(modules, sets, rank, world)))
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def held(run: dict[str, Any]) -> int:
    """Parameters + gradients + optimizer state of one process, in bytes."""
    return run["param_bytes"] + run["grad_bytes"] + run["optimizer_bytes"]


def contender(src: Path, world: int, strategy: str, out: Path) -> dict[str, Any]:
    """One run of `world` processes; rank 0's figures, and the largest over the ranks."""
    queue = mp.get_context("spawn").Queue()
    mp.spawn(worker, (world, str(src), free_port(), strategy, str(out), queue), nprocs=world)
    ranks = dict(queue.get() for _ in range(world))
    result = dict(ranks[0])
    result["max_over_ranks_bytes"] = max(held(r) for r in ranks.values())
    return result


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        options = ProjectOptions(name=PKG, task="sequence-classification", model="transformer")
        src = new_project(options, Path(tmp), run_smoke=False).path / "src"
        runs = {
            "1 process": contender(src, 1, "auto", Path(tmp)),
            "2 processes, ddp": contender(src, 2, "ddp", Path(tmp)),
            "2 processes, fsdp": contender(src, 2, "fsdp", Path(tmp)),
        }
    base = runs["1 process"]
    for run in runs.values():
        run["held_mib"] = round(held(run) / 2**20, 2)
        run["held_ratio_to_1_process"] = round(held(run) / held(base), 3)
        rise = run["peak_rss_rise_mib"] / base["peak_rss_rise_mib"]
        run["peak_rise_ratio_to_1_process"] = round(rise, 3)
    result = {"runs": runs, "steps": STEPS, "load_1min": round(os.getloadavg()[0], 2)}
    print(json.dumps(result, indent=2))
    Path(__file__).with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
