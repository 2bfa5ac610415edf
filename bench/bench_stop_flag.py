"""The cost of the stop flag under torchrun (issue 20): at every optimizer step each rank
all-reduces one small tensor so that all ranks stop after the same step.

Two gloo processes (one thread each) train the generated project's default cnn with DDP
on its default batch (32 per rank, 32x32 images), alternating blocks of steps with and
without `StopSignals.agreed()`; prints the median step time of each, their ratio and the
median time of the all-reduce itself, and writes bench/bench_stop_flag.json.

    python bench/bench_stop_flag.py
"""

from __future__ import annotations

import importlib
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from ptgen.project import ProjectOptions, new_project

PKG = "flagbench"
BLOCKS, STEPS = 20, 10


def worker(rank: int, src: str, port: int, results: mp.Queue) -> None:
    sys.path.insert(0, src)
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    config = importlib.import_module(f"{PKG}.config").load_config()
    runtime = importlib.import_module(f"{PKG}.runtime")
    spec = importlib.import_module(f"{PKG}.tasks").DataSpec(num_outputs=10)
    model = importlib.import_module(f"{PKG}.models").build_model(config.model, spec)
    signals = importlib.import_module(f"{PKG}.stopping").StopSignals(runtime.DistInfo(rank, 2))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), fused=True)
    inputs, targets = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
    times: dict[str, list[float]] = {"plain": [], "flag": [], "all_reduce": []}
    for block in range(BLOCKS):
        for kind in ("plain", "flag") if block % 2 == 0 else ("flag", "plain"):
            for _ in range(STEPS):
                start = time.perf_counter()
                torch.nn.functional.cross_entropy(ddp(inputs), targets).backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                if kind == "flag":
                    flag_start = time.perf_counter()
                    assert signals.agreed() is None
                    times["all_reduce"].append(time.perf_counter() - flag_start)
                times[kind].append(time.perf_counter() - start)
    if rank == 0:
        results.put(times)
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = new_project(ProjectOptions(name=PKG), Path(tmp), run_smoke=False).path
        results: mp.Queue = mp.get_context("spawn").Queue()
        mp.spawn(worker, (str(project / "src"), free_port(), results), nprocs=2)
        times = results.get()
    median = {k: statistics.median(v[STEPS:]) * 1000 for k, v in times.items()}  # ms
    result = {
        "median_step_ms": {
            "without flag": round(median["plain"], 3),
            "with flag": round(median["flag"], 3),
        },
        "ratio_with_over_without": round(median["flag"] / median["plain"], 4),
        "median_all_reduce_ms": round(median["all_reduce"], 4),
        "steps_each": BLOCKS // 2 * STEPS,
        "load_1min": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result, indent=2))
    Path(__file__).with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
