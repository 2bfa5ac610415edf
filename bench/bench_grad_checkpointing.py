"""Gradient checkpointing: peak activation memory, step time and gradients, with and without.

The model is a generated project's model made deep: by default the transformer
(`--depth` equal encoder layers, sequences up to `--max-length` tokens); `--model cnn
--task image-classification` measures the CNN (each block halves the resolution, so
its activations shrink geometrically and block 1 alone is about half of them). The
plain and the checkpointed model start from identical weights and train on the same
batch at the same batch size.

Memory method: one training step (forward, backward, optimizer step) of each model
runs under `torch.profiler.profile(profile_memory=True, record_shapes=True,
with_stack=True)`; the profiler's memory timeline (`export_memory_timeline`, JSON)
classifies every CPU allocation (parameter, gradient, optimizer state, input,
activation, temporary, autograd detail, unclassified). Three peaks over the step:

- activations: tensors saved for backward, categories ACTIVATION + AUTOGRAD_DETAIL
  (the second holds what checkpointing recomputes in backward);
- + temporaries: also TEMPORARY and unclassified bytes (the gradients of activations
  that backward creates and frees), i.e. everything but parameters, gradients,
  optimizer state and inputs;
- total: every category.

Step time: the project's `engine.forward_backward` + `engine.optimizer_step` (AdamW, no
clipping), plain and checkpointed interleaved,
`--repeats` rounds of `--steps` steps, medians (wall and process CPU time).

    PYTHONPATH=src python bench/bench_grad_checkpointing.py --json /tmp/gc.json
    PYTHONPATH=src python bench/bench_grad_checkpointing.py --model cnn \
        --task image-classification --depth 5 --width 32 --json /tmp/gc_cnn.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import warnings
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

# columns of the timeline JSON: column 0 is a baseline, column i+1 is category i
CATEGORIES = (
    "parameter",
    "optimizer_state",
    "input",
    "temporary",
    "activation",
    "gradient",
    "autograd_detail",
    "unknown",
)
SAVED = {"activation", "autograd_detail"}
STATE = {"parameter", "optimizer_state", "input", "gradient"}


def build(mods: dict[str, Any], args: argparse.Namespace, checkpointing: bool) -> Any:
    # each dataset declares only its own keys: images have a size, sequences a length
    if args.task == "image-classification":
        size = f"data.image_size={args.image_size}"
    else:
        size = f"data.max_length={args.max_length}"
    overrides = [
        f"model.depth={args.depth}",
        f"model.width={args.width}",
        size,
        "model.dropout=0.0",  # identical outputs without matching dropout masks
        f"model.grad_checkpointing={str(checkpointing).lower()}",
        f"train.batch_size={args.batch_size}",
        *args.set,
    ]
    config = mods["config"].load_config(None, overrides)
    torch.manual_seed(0)
    bundle = mods["data"].build_data(config.data, config.train.seed)
    model = mods["models"].build_model(config.model, bundle.spec)
    return config, bundle, model


def memory_profile(step: Any, batch: dict[str, torch.Tensor], tmp: Path) -> dict[str, float]:
    step(batch)  # gradients and optimizer state exist before the profiled step
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(
        activities=activities, profile_memory=True, record_shapes=True, with_stack=True
    ) as prof:
        step(batch)
    path = tmp / "timeline.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecated for CUDA snapshots
        prof.export_memory_timeline(str(path), device="cpu")
    _, sizes = json.loads(path.read_text())
    per_category = [dict(zip(CATEGORIES, row[1:], strict=True)) for row in sizes]
    saved = max(sum(v for k, v in r.items() if k in SAVED) for r in per_category)
    transient = max(sum(v for k, v in r.items() if k not in STATE) for r in per_category)
    total = max(sum(r.values()) for r in per_category)
    return {
        "activation_mib": saved / 2**20,
        "activation_temporary_mib": transient / 2**20,
        "total_mib": total / 2**20,
    }


def gradient_difference(
    mods: dict[str, Any], task: str, plain: torch.nn.Module, ckpt: torch.nn.Module, batch: dict
) -> float:
    """Largest |grad difference| relative to the largest |grad|, same weights and batch."""
    ckpt.load_state_dict(plain.state_dict())
    for model in (plain, ckpt):
        model.train()
        model.zero_grad(set_to_none=True)
        outputs = model(**mods["engine"].model_inputs(batch))
        mods["tasks"].get_task(task).loss(outputs, batch["targets"]).backward()
    pairs = list(zip(plain.parameters(), ckpt.parameters(), strict=True))
    diff = max((p.grad - q.grad).abs().max().item() for p, q in pairs)
    scale = max(p.grad.abs().max().item() for p, _ in pairs)
    return diff / scale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="transformer", help="model kind (ptgen list)")
    parser.add_argument("--task", default="sequence-classification")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--image-size", type=int, default=64, help="images: side in pixels")
    parser.add_argument("--max-length", type=int, default=256, help="sequences: tokens")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--set", action="append", default=[], help="extra KEY=VALUE override")
    parser.add_argument("--steps", type=int, default=3, help="steps per timed round")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="bench-gc-") as tmp:
        mods = import_project(generate_project(Path(tmp), task=args.task, model=args.model))
        config, bundle, plain = build(mods, args, checkpointing=False)
        _, _, ckpt = build(mods, args, checkpointing=True)
        ckpt.load_state_dict(plain.state_dict())
        loader, _, _ = mods["data"].build_loaders(
            bundle, config, mods["runtime"].DistInfo(), torch.device("cpu")
        )
        batch = next(iter(loader))
        grad_diff = gradient_difference(mods, config.task, plain, ckpt, batch)
        steps = {
            name: train_step_fn(mods, config.task, model, torch.device("cpu"), False, 0.0)
            for name, model in (("plain", plain), ("checkpointed", ckpt))
        }
        memory = {name: memory_profile(step, batch, Path(tmp)) for name, step in steps.items()}
        runs = {name: (lambda s=s: timed_steps(s, batch, args.steps)) for name, s in steps.items()}
        interleaved(runs, 1)  # warm-up
        times = interleaved(runs, args.repeats)
    report(args, memory, times, grad_diff, plain)


def describe_input(args: argparse.Namespace) -> str:
    if args.task == "image-classification":
        return f"{args.image_size}x{args.image_size} images"
    return f"sequences up to {args.max_length} tokens"


def report(args: Any, memory: dict, times: dict, grad_diff: float, model: Any) -> None:
    ms = {
        clock: {n: median([t[i] for t in ts]) / args.steps * 1e3 for n, ts in times.items()}
        for i, clock in enumerate(("wall", "cpu"))
    }
    params = sum(p.numel() for p in model.parameters())
    print(
        f"\n{args.model} depth {args.depth}, width {args.width}, {describe_input(args)}, "
        f"batch {args.batch_size}, "
        f"{params:,} parameters, {args.threads} thread(s)\n"
    )
    keys = ("activation_mib", "activation_temporary_mib", "total_mib")
    rows = [[n, *[memory[n][k] for k in keys], ms["wall"][n], ms["cpu"][n]] for n in memory]
    headers = [
        "model",
        "activations MiB",
        "+ temporaries MiB",
        "total MiB",
        "wall ms/step",
        "CPU ms/step",
    ]
    print_table(headers, rows)
    cut = {k: 1 - memory["checkpointed"][k] / memory["plain"][k] for k in keys}
    saving = cut["activation_mib"]
    slowdown = {c: ms[c]["checkpointed"] / ms[c]["plain"] for c in ms}
    print(
        f"\npeak cut: activations {saving:.1%}, with temporaries "
        f"{cut['activation_temporary_mib']:.1%}, total {cut['total_mib']:.1%}; "
        f"step time x{slowdown['wall']:.2f} (wall), "
        f"x{slowdown['cpu']:.2f} (CPU time); max relative gradient difference {grad_diff:.2e}"
    )
    write_json(
        args.json,
        {
            "benchmark": "grad_checkpointing",
            "settings": {**vars(args), "json": str(args.json), "parameters": params},
            "machine": machine(),
            "memory_mib": memory,
            "peak_cut": cut,
            "step_ms_median": ms,
            "step_time_ratio": slowdown,
            "step_times_s": times,
            "max_relative_grad_difference": grad_diff,
        },
    )


if __name__ == "__main__":
    main()
