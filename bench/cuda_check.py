"""CUDA check of the performance options (one GPU, well under 5 minutes).

Generates a project with this checkout's ptgen, then on `cuda:0`:

1. float16 autocast + GradScaler: `build_run` makes an enabled scaler, steps train
   with gradient clipping (unscale first), the loss stays finite, and the scaler's
   state (scale, growth tracker) is in the checkpoint and restores on resume;
2. bfloat16 autocast where supported: no scaler;
3. torch.compile: a compiled run trains, its checkpoint has no `_orig_mod.` keys and
   loads into a plain model; compile time and steady step time;
4. train.profile: the trace file, the top operators, peak memory and
   `torch.cuda.memory_summary()` are printed;
5. step time (synchronised, medians) of eager float32, eager float16 AMP and compiled
   float16 AMP; peak memory (`torch.cuda.max_memory_allocated`) of a deep CNN with
   and without gradient checkpointing, and its gradients against the plain model's.

Prints a table per check and writes everything as JSON (`--json`, default
`$OUT/cuda_check.json` when $OUT is set).

    PYTHONPATH=src python bench/cuda_check.py --json /tmp/cuda_check.json

`--device cpu` is a dry run of the same checks on CPU, for a machine without a GPU: it
exercises the project calls each check makes (build_run, train, resume, checkpoints,
compile, the profiler, the step pieces), and the CUDA-only assertions fail there as they
must: the float16 GradScaler check (CPU autocast is bfloat16, without a scaler), the CUDA
memory report and the CUDA peak-memory check. Its timings mean nothing for a GPU.

    PYTHONPATH=src python bench/cuda_check.py --device cpu --repeats 1 --timed-steps 1 \
        --json /tmp/cuda_dry_run.json   # 5-15 min on 2 busy cores, mostly compilation
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from _common import (
    generate_project,
    import_project,
    machine,
    median,
    print_table,
    train_step_fn,
    write_json,
)

DEVICE = torch.device("cuda", 0)  # main() sets torch.device("cpu") for --device cpu


def config_for(mods: dict[str, Any], out_dir: Path, *overrides: str) -> Any:
    fixed = [f"train.device={DEVICE.type}", f"train.out_dir={out_dir}", "data.num_samples=1024"]
    return mods["config"].load_config(None, [*fixed, *overrides])


def train_run(mods: dict[str, Any], config: Any) -> tuple[Any, dict[str, Any], str]:
    """build_run + train (the project's loop), stdout captured (the profiler prints its
    report)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        run = mods["train"].build_run(config, mods["runtime"].DistInfo(), DEVICE)
        result = mods["train"].train(run)
    return run, result, buffer.getvalue()


def check_fp16_scaler(mods: dict[str, Any], tmp: Path) -> dict[str, Any]:
    config = config_for(
        mods,
        tmp / "fp16",
        "train.amp=true",
        "train.max_steps=20",
        "train.epochs=1",
        "train.grad_clip=1.0",
    )
    run, result, _ = train_run(mods, config)
    saved = torch.load(tmp / "fp16" / "last.pt", weights_only=True)["scaler_state_dict"]
    resumed = config_for(
        mods,
        tmp / "fp16",
        "train.amp=true",
        "train.max_steps=25",
        "train.epochs=1",
        "train.resume=auto",
    )
    run2 = mods["train"].build_run(resumed, mods["runtime"].DistInfo(), DEVICE)
    assert run.precision.scaler.is_enabled(), "float16 on CUDA must use an enabled GradScaler"
    assert "scale" in saved and saved["scale"] > 0, saved
    assert run2.precision.scaler.get_scale() == saved["scale"], "scaler state not restored"
    assert torch.isfinite(torch.tensor(result["loss"])), result
    return {
        "scaler_enabled": True,
        "saved_scale": saved["scale"],
        "val_loss": result["loss"],
        "steps": result["step"],
    }


def check_bf16(mods: dict[str, Any], tmp: Path) -> dict[str, Any]:
    if DEVICE.type == "cuda" and not torch.cuda.is_bf16_supported():
        return {"skipped": "bfloat16 not supported on this GPU"}
    config = config_for(
        mods,
        tmp / "bf16",
        "train.amp=true",
        "train.amp_dtype=bfloat16",
        "train.max_steps=10",
        "train.epochs=1",
    )
    run, result, _ = train_run(mods, config)
    assert run.precision.dtype == torch.bfloat16, run.precision
    assert not run.precision.scaler.is_enabled(), "bfloat16 needs no GradScaler"
    return {"scaler_enabled": False, "val_loss": result["loss"]}


def check_compile(mods: dict[str, Any], tmp: Path) -> dict[str, Any]:
    config = config_for(
        mods,
        tmp / "compiled",
        "train.compile=true",
        "train.amp=true",
        "train.max_steps=10",
        "train.epochs=1",
    )
    start = time.perf_counter()
    _, result, _ = train_run(mods, config)
    seconds = time.perf_counter() - start
    checkpoint = mods["checkpoint"].load_checkpoint(tmp / "compiled" / "last.pt")
    prefixed = [k for k in checkpoint["model_state_dict"] if k.startswith("_orig_mod.")]
    assert not prefixed, prefixed[:3]
    bundle = mods["data"].build_data(config.data, config.train.seed)
    plain = mods["models"].build_model(config.model, bundle.spec)
    mods["checkpoint"].load_model_state(plain, checkpoint, "last.pt", config.to_dict())
    return {
        "run_seconds_incl_compile": seconds,
        "val_loss": result["loss"],
        "loads_into_plain_model": True,
    }


def check_profile(mods: dict[str, Any], tmp: Path) -> dict[str, Any]:
    config = config_for(
        mods,
        tmp / "profile",
        "train.profile=true",
        "train.amp=true",
        "train.max_steps=8",
        "train.epochs=1",
    )
    _, _, output = train_run(mods, config)
    trace = tmp / "profile" / "profile" / "trace.json"
    assert trace.is_file(), "no trace file"
    assert "peak CUDA memory" in output, output[-2000:]
    assert "Self CUDA" in output or "CUDA total" in output, "no CUDA columns in the table"
    print(output)
    return {"trace_bytes": trace.stat().st_size, "report_lines": len(output.splitlines())}


def synchronize() -> None:
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def synced_ms_per_step(step: Callable[[], Any], steps: int) -> float:
    synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    synchronize()
    return (time.perf_counter() - start) / steps * 1e3


def check_step_time(
    mods: dict[str, Any], tmp: Path, repeats: int, steps: int = 20
) -> dict[str, Any]:
    config = config_for(mods, tmp / "t", "train.batch_size=256", "model.width=64", "model.depth=3")
    bundle = mods["data"].build_data(config.data, config.train.seed)
    loader, _, _ = mods["data"].build_loaders(bundle, config, mods["runtime"].DistInfo(), DEVICE)
    batch = mods["engine"].to_device(next(iter(loader)), DEVICE)
    variants = {}
    for name, amp, compiled in (
        ("eager fp32", False, False),
        ("eager fp16 AMP", True, False),
        ("compiled fp16 AMP", True, True),
    ):
        model = mods["models"].build_model(config.model, bundle.spec).to(DEVICE)
        if compiled:
            model = torch.compile(model)
        step = train_step_fn(mods, config.task, model, DEVICE, amp, 1.0, fused=True)
        start = time.perf_counter()
        for _ in range(3):
            step(batch)
        synchronize()
        variants[name] = {"warmup_s": time.perf_counter() - start, "step": step}
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):  # interleaved rounds
        for name, v in variants.items():
            times[name].append(synced_ms_per_step(lambda v=v: v["step"](batch), steps))
    base = median(times["eager fp32"])
    return {
        name: {
            "median_ms": median(t),
            "speedup_vs_fp32": base / median(t),
            "warmup_s": variants[name]["warmup_s"],
        }
        for name, t in times.items()
    }


def check_grad_checkpointing(mods: dict[str, Any], tmp: Path) -> dict[str, Any]:
    overrides = [
        "model.depth=5",
        "model.width=64",
        "data.image_size=128",
        "model.dropout=0.0",
        "train.batch_size=64",
    ]
    result = {}
    grads = {}
    for gc in (False, True):
        config = config_for(
            mods, tmp / "gc", *overrides, f"model.grad_checkpointing={str(gc).lower()}"
        )
        torch.manual_seed(0)
        bundle = mods["data"].build_data(config.data, config.train.seed)
        model = mods["models"].build_model(config.model, bundle.spec).to(DEVICE)
        loader, _, _ = mods["data"].build_loaders(
            bundle, config, mods["runtime"].DistInfo(), DEVICE
        )
        batch = mods["engine"].to_device(next(iter(loader)), DEVICE)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(DEVICE)
        before = torch.cuda.memory_allocated(DEVICE)
        outputs = model(**mods["engine"].model_inputs(batch))
        torch.nn.functional.cross_entropy(outputs.float(), batch["targets"]).backward()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated(DEVICE) - before
        grads[gc] = [p.grad.detach().clone() for p in model.parameters()]
        result["checkpointed" if gc else "plain"] = {"peak_above_start_mib": peak / 2**20}
        del model, outputs
        torch.cuda.empty_cache()
    diff = max((a - b).abs().max().item() for a, b in zip(grads[False], grads[True], strict=True))
    result["peak_cut"] = 1 - (
        result["checkpointed"]["peak_above_start_mib"] / result["plain"]["peak_above_start_mib"]
    )
    result["max_abs_grad_difference"] = diff
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    out = os.environ.get("OUT")
    parser.add_argument("--json", type=Path, default=Path(out) / "cuda_check.json" if out else None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--timed-steps", type=int, default=20, help="steps per timed round")
    parser.add_argument(
        "--device",
        choices=("cuda", "cpu"),
        default="cuda",
        help="cpu: a dry run of the same checks (CUDA-only assertions fail there)",
    )
    args = parser.parse_args()
    global DEVICE
    if args.device == "cpu":
        DEVICE = torch.device("cpu")
    elif not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this check needs a GPU (or --device cpu, a dry run)")
    gpu = torch.cuda.get_device_name(0) if DEVICE.type == "cuda" else None
    report: dict[str, Any] = {"machine": {**machine(), "gpu": gpu}, "device": str(DEVICE)}
    checks: dict[str, Callable[[dict, Path], dict]] = {
        "fp16_gradscaler": check_fp16_scaler,
        "bf16_no_scaler": check_bf16,
        "compile": check_compile,
        "profile_memory_report": check_profile,
        "step_time": lambda m, t: check_step_time(m, t, args.repeats, args.timed_steps),
        "grad_checkpointing_memory": check_grad_checkpointing,
    }
    with tempfile.TemporaryDirectory(prefix="cuda-check-") as tmp:
        mods = import_project(generate_project(Path(tmp)))
        rows = []
        for name, check in checks.items():
            start = time.perf_counter()
            try:
                report[name], ok = check(mods, Path(tmp) / name), True
            except Exception as exc:  # report every check, do not stop at the first
                report[name], ok = {
                    "error": f"{type(exc).__name__}: {exc}",
                    "traceback": traceback.format_exc(),
                }, False
            rows.append([name, "PASS" if ok else "FAIL", time.perf_counter() - start])
    print_table(["check", "result", "seconds"], rows)
    for name in report:
        print(f"\n{name}: {json.dumps(report[name], default=str)[:400]}")
    report["ok"] = all(r[1] == "PASS" for r in rows)
    write_json(args.json, report)
    raise SystemExit(0 if report["ok"] else 1)


if __name__ == "__main__":
    main()
