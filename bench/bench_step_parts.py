"""What the pieces of one generated training step cost, and how much a plain step wanders.

On the generated project's model (default and tiny size), each piece is called in a loop
of `--calls` calls after a warm-up and timed per call (CPU time, one thread, pinned to
one core), side by side with its alternative:

- AdamW step, torch's default (a Python loop over tensors on CPU) vs `fused=True` (the
  project's choice): gradients present, same parameters;
- gradient clipping over `model.parameters()` (walks the module tree every call) vs over
  the optimizer's parameter list (what the generated `optimizer_step` does);
- `model.train()`, which the project's loop (`train.train`) calls once per epoch.

Then `--steps` plain forward/backward/step iterations on the default model, timed one by
one: the spread of identical work on this machine (why bench_training_loop.py times its
contenders in lockstep).

    PYTHONPATH=src python bench/bench_step_parts.py --json /tmp/step_parts.json
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from _common import generate_project, import_project, machine, print_table, write_json

SIZES = {"default": [], "tiny": ["data.image_size=8", "model.width=8"]}


def per_call_ms(fn: Callable[[], Any], calls: int) -> float:
    for _ in range(max(calls // 20, 5)):
        fn()
    start = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - start) / calls * 1000


def parts(mods: dict[str, Any], tmp: Path, size: str, calls: int) -> dict[str, float]:
    overrides = [f"train.out_dir={tmp / size}", "train.device=cpu", "data.num_samples=64"]
    config = mods["config"].load_config(None, overrides + SIZES[size])
    run = mods["train"].build_run(config, mods["runtime"].DistInfo(), torch.device("cpu"))
    model, batch = run.model, next(iter(run.train_loader))
    F.cross_entropy(model(batch["inputs"]), batch["targets"]).backward()  # gradients present
    params = [p for group in run.optimizer.param_groups for p in group["params"]]
    clip = torch.nn.utils.clip_grad_norm_
    result = {}
    for name, kwargs in (
        ("AdamW step, torch default", {}),
        ("AdamW step, fused=True", {"fused": True}),
    ):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-9, **kwargs)
        result[name] = per_call_ms(optimizer.step, calls)
    result["clip over model.parameters()"] = per_call_ms(
        lambda: clip(model.parameters(), 1e9), calls
    )
    result["clip over the optimizer's list"] = per_call_ms(
        lambda: clip([p for g in run.optimizer.param_groups for p in g["params"]], 1e9), calls
    )
    result["tensors"] = len(params)
    result["model.train()"] = per_call_ms(model.train, calls)
    return result


def spread(mods: dict[str, Any], tmp: Path, steps: int) -> dict[str, float]:
    overrides = [f"train.out_dir={tmp / 'spread'}", "train.device=cpu", "data.num_samples=1024"]
    config = mods["config"].load_config(None, overrides)
    run = mods["train"].build_run(config, mods["runtime"].DistInfo(), torch.device("cpu"))
    model, optimizer = run.model, run.optimizer
    times = []
    for batch in itertools.islice(itertools.cycle(run.train_loader), steps + 10):
        start = time.process_time()
        optimizer.zero_grad()
        F.cross_entropy(model(batch["inputs"]), batch["targets"]).backward()
        optimizer.step()
        times.append((time.process_time() - start) * 1000)
    times = times[10:]
    deciles = statistics.quantiles(times, n=10)
    return {
        "min": min(times),
        "p10": deciles[0],
        "median": statistics.median(times),
        "p90": deciles[-1],
        "max": max(times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="timed calls per piece")
    parser.add_argument("--steps", type=int, default=300, help="plain steps for the spread")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    with tempfile.TemporaryDirectory(prefix="bench-parts-") as tmp:
        mods = import_project(generate_project(Path(tmp)))
        results = {size: parts(mods, Path(tmp), size, args.calls) for size in SIZES}
        step_spread = spread(mods, Path(tmp), args.steps)
    names = [k for k in results["default"] if k != "tensors"]
    print(
        f"\nper call, ms (CPU time, {args.calls} calls; {results['default']['tensors']} tensors)\n"
    )
    print_table(["piece"] + list(SIZES), [[n] + [results[s][n] for s in SIZES] for n in names])
    print(f"\nplain step on the default model, {args.steps} steps, ms\n")
    print_table(list(step_spread), [list(step_spread.values())])
    write_json(
        args.json,
        {"benchmark": "step_parts", "machine": machine(), "parts": results, "spread": step_spread},
    )


if __name__ == "__main__":
    main()
