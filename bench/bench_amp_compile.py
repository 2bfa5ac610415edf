"""AMP (bfloat16) and torch.compile on CPU: step time against plain eager float32.

Four variants of the generated project's default model train with the project's own
step pieces, `engine.forward_backward` + `engine.optimizer_step` (AdamW, default gradient
clipping, `runtime.precision`'s autocast and disabled GradScaler) on the same preloaded
batch: eager float32, eager bfloat16
autocast, compiled float32, compiled bfloat16 (`torch.compile(mode=--mode)`, the way
`train.prepare_model` does it). Warm-up steps (including compilation, reported
separately) are excluded; rounds of `--steps` steps are interleaved and repeated.

    PYTHONPATH=src python bench/bench_amp_compile.py --repeats 9 --json /tmp/amp.json
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from _common import (
    generate_project,
    import_project,
    interleaved,
    machine,
    median,
    print_table,
    timed_steps,
    train_step_fn,
    write_json,
)

VARIANTS = {  # name: (amp, compile)
    "eager fp32": (False, False),
    "eager bf16 autocast": (True, False),
    "compiled fp32": (False, True),
    "compiled bf16 autocast": (True, True),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=5, help="steps per timed round")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--mode", default="default", help="torch.compile mode")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="bench-amp-") as tmp:
        mods = import_project(generate_project(Path(tmp)))
        config = mods["config"].load_config(None, [f"train.batch_size={args.batch_size}"])
        bundle = mods["data"].build_data(config.data, config.train.seed)
        loader, _, _ = mods["data"].build_loaders(
            bundle, config, mods["runtime"].DistInfo(), torch.device("cpu")
        )
        batch = next(iter(loader))
        torch.manual_seed(0)
        base = mods["models"].build_model(config.model, bundle.spec)
        steps, warmup_s = {}, {}
        for name, (amp, compiled) in VARIANTS.items():
            model = mods["models"].build_model(config.model, bundle.spec)
            model.load_state_dict(base.state_dict())  # identical initial weights
            if compiled:
                model = torch.compile(model, mode=args.mode)
            steps[name] = train_step_fn(
                mods,
                config.task,
                model,
                torch.device("cpu"),
                amp,
                config.train.grad_clip,
                config.train.lr,
            )
            start = time.perf_counter()
            for _ in range(3):  # compiles forward and backward on the first step
                steps[name](batch)
            warmup_s[name] = time.perf_counter() - start
        runs = {name: (lambda s=s: timed_steps(s, batch, args.steps)) for name, s in steps.items()}
        times = interleaved(runs, args.repeats)
    report(args, times, warmup_s)


def report(args: argparse.Namespace, times: dict, warmup_s: dict) -> None:
    base = "eager fp32"
    result: dict[str, Any] = {}
    for i, clock in enumerate(("wall", "cpu")):
        ms = {n: [t[i] / args.steps * 1e3 for t in ts] for n, ts in times.items()}
        paired = {
            n: median([b / a for a, b in zip(v, ms[base], strict=True)]) for n, v in ms.items()
        }
        result[clock] = {
            "ms_per_step": ms,
            "median_ms": {n: median(v) for n, v in ms.items()},
            "speedup_vs_eager_fp32": paired,
        }
    print(
        f"\ndefault CNN, batch {args.batch_size}, {args.threads} thread(s), "
        f"{args.repeats} rounds of {args.steps} steps; speed-up = median over rounds of "
        f"(eager fp32 time / variant time)\n"
    )
    rows = [
        [
            n,
            result["wall"]["median_ms"][n],
            result["wall"]["speedup_vs_eager_fp32"][n],
            result["cpu"]["median_ms"][n],
            result["cpu"]["speedup_vs_eager_fp32"][n],
            warmup_s[n],
        ]
        for n in times
    ]
    headers = [
        "variant",
        "wall ms/step",
        "wall speed-up",
        "CPU ms/step",
        "CPU speed-up",
        "first 3 steps [s]",
    ]
    print_table(headers, rows)
    write_json(
        args.json,
        {
            "benchmark": "amp_compile",
            "settings": {**vars(args), "json": str(args.json)},
            "machine": machine(),
            "warmup_s": warmup_s,
            **result,
        },
    )


if __name__ == "__main__":
    main()
