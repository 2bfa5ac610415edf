"""CUDA check: what a GPU user of a generated project depends on, in one run (< 5 min, one GPU).

Generates the default image project and a text project (sequence-classification) with this
checkout's ptgen, then on `cuda:0` checks and measures:

  amp_bf16            bfloat16 autocast, the project's loop: loss finite, no GradScaler (its
                      scale never moves); what train.amp_dtype=auto picks on this GPU
  amp_fp16            float16 autocast + GradScaler: loss finite, the scale moves (a scaler
                      with a short growth interval over 30 steps), its state is checkpointed
                      and restored on resume
  tf32                float32 matmul time and error at matmul_precision highest vs high
                      (TF32); what build_run sets (auto: high; deterministic: highest)
  compile             a torch.compile run trains; its checkpoint loads into a plain model
  grad_checkpointing  peak memory of a deep CNN's step with and without it; same gradients
  pinned_memory       the project's loader pins its batches; host->GPU copy time, pageable
                      blocking vs pinned non_blocking
  ddp, fsdp           2-GPU torchrun runs on NCCL (train.strategy=ddp / fsdp, FSDP2);
                      skipped with a note on a machine with one GPU
  resume_sigkill      a run SIGKILLed after a step checkpoint, resumed: last.pt bit-identical
                      to an uninterrupted run's (train.deterministic=true)
  step_time           the default image and text projects' training step (synchronised
                      medians), float32 / bfloat16 / float16 AMP side by side

Prints a table and writes every result as JSON (`--json`; default `$OUT/cuda_check.json`
when $OUT is set). Exits 1 if a check fails; on a machine without CUDA it exits 1 at once
with one line saying so (`--device cpu` runs what can run on CPU, as a dry run of the
script; the CUDA-only checks fail there).

    PYTHONPATH=src python bench/cuda_check.py --json /tmp/cuda_check.json
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from _common import machine, median, print_table, write_json

DEVICE = torch.device("cuda", 0)  # main() sets torch.device("cpu") for --device cpu
MODULES = ("checkpoint", "config", "data", "engine", "models", "runtime", "tasks", "train")
Mods = dict[str, ModuleType]


def generate(parent: Path, name: str, **options: Any) -> Path:
    from ptgen.project import ProjectOptions, new_project

    return new_project(ProjectOptions(name=name, **options), parent, run_smoke=False).path


def import_package(project: Path, package: str) -> Mods:
    sys.path.insert(0, str(project / "src"))
    return {name: importlib.import_module(f"{package}.{name}") for name in MODULES}


def config_for(mods: Mods, out_dir: Path, *overrides: str) -> Any:
    fixed = [f"train.device={DEVICE.type}", f"train.out_dir={out_dir}", "train.epochs=1"]
    return mods["config"].load_config(None, [*fixed, *overrides])


def train_run(mods: Mods, config: Any) -> tuple[Any, dict[str, Any]]:
    """build_run + train (the project's loop), its printing captured."""
    with contextlib.redirect_stdout(io.StringIO()):
        run = mods["train"].build_run(config, mods["runtime"].DistInfo(), DEVICE)
        result = mods["train"].train(run, mods["train"].start_monitor(run))
    return run, result


def train_losses(out_dir: Path) -> list[float]:
    rows = csv.DictReader(open(out_dir / "metrics.csv", encoding="utf-8"))
    return [float(row["loss"]) for row in rows if row["split"] == "train"]


def scale_trajectory(mods: Mods, run: Any, steps: int = 30) -> list[float]:
    """The GradScaler's scale over `steps` steps of the project's engine, with a scaler of
    a short growth interval (the project's grows every 2000 steps) where it is enabled."""
    scaler = run.precision.scaler
    if scaler.is_enabled():
        scaler = torch.amp.GradScaler(DEVICE.type, init_scale=2.0**20, growth_interval=5)
    precision = mods["runtime"].Precision(DEVICE, True, run.precision.dtype, scaler)
    batch = mods["engine"].to_device(next(iter(run.train_loader)), DEVICE)
    scales = []
    for _ in range(steps):
        mods["engine"].forward_backward(run.train_model, batch, run.task, precision)
        mods["engine"].optimizer_step(run.optimizer, scaler, 1.0)
        scales.append(scaler.get_scale() if scaler.is_enabled() else 1.0)
    return scales


def check_amp_bf16(mods: Mods, tmp: Path) -> dict[str, Any]:
    supported = DEVICE.type != "cuda" or torch.cuda.get_device_capability(DEVICE)[0] >= 8
    auto = config_for(mods, tmp / "auto", "train.amp=true", "train.max_steps=1")
    mods["runtime"].precision(DEVICE, auto.train)  # resolves train.amp_dtype=auto
    chosen = auto.train.amp_dtype
    if not supported:
        return {"skipped": "no native bfloat16 on this GPU", "auto_picks": chosen}
    config = config_for(mods, tmp / "bf16", "train.amp=true", "train.max_steps=20")
    run, result = train_run(mods, config)
    losses = train_losses(tmp / "bf16")
    scales = scale_trajectory(mods, run)
    assert run.precision.dtype == torch.bfloat16 and chosen == "bfloat16", (run.precision, chosen)
    assert not run.precision.scaler.is_enabled(), "bfloat16 needs no GradScaler"
    assert all(torch.isfinite(torch.tensor(losses))), losses
    assert len(set(scales)) == 1, scales
    return {"auto_picks": chosen, "train_losses": losses, "val_loss": result["loss"]}


def check_amp_fp16(mods: Mods, tmp: Path) -> dict[str, Any]:
    fp16 = ["train.amp=true", "train.amp_dtype=float16", "train.checkpoint_every=10"]
    config = config_for(mods, tmp / "fp16", *fp16, "train.max_steps=20")
    run, result = train_run(mods, config)
    losses = train_losses(tmp / "fp16")
    saved = torch.load(tmp / "fp16" / "last.pt", weights_only=True)["scaler_state_dict"]
    resumed = config_for(mods, tmp / "fp16", *fp16, "train.max_steps=25", "train.resume=auto")
    with contextlib.redirect_stdout(io.StringIO()):
        run2 = mods["train"].build_run(resumed, mods["runtime"].DistInfo(), DEVICE)
    scales = scale_trajectory(mods, run2)
    assert run.precision.scaler.is_enabled(), "float16 on CUDA must use an enabled GradScaler"
    assert run2.precision.scaler.get_scale() == saved["scale"], "scaler state not restored"
    assert all(torch.isfinite(torch.tensor(losses))), losses
    assert len(set(scales)) > 1, f"the scale never moved: {scales}"
    return {"train_losses": losses, "saved_scale": saved["scale"], "scales": scales}


def check_tf32(mods: Mods, tmp: Path, size: int = 4096) -> dict[str, Any]:
    a, b = (torch.randn(size, size, device=DEVICE) for _ in range(2))
    exact = (a.double() @ b.double()).float()
    result: dict[str, Any] = {}
    for mode in ("highest", "high"):
        torch.set_float32_matmul_precision(mode)
        ms = synced_ms_per_step(lambda: a @ b, 20)
        error = ((a @ b) - exact).abs().max().item() / exact.abs().max().item()
        result[mode] = {"ms": ms, "tflops": 2 * size**3 / ms / 1e9, "max_rel_error": error}
    result["speedup"] = result["highest"]["ms"] / result["high"]["ms"]
    for overrides, expected in (((), "high"), (("train.deterministic=true",), "highest")):
        config = config_for(mods, tmp / "build", *overrides)
        with contextlib.redirect_stdout(io.StringIO()):
            mods["train"].build_run(config, mods["runtime"].DistInfo(), DEVICE)
        assert torch.get_float32_matmul_precision() == expected, (overrides, expected)
    result["build_run_sets"] = {"default": "high", "deterministic": "highest"}
    return result


def check_compile(mods: Mods, tmp: Path) -> dict[str, Any]:
    config = config_for(
        mods, tmp / "compiled", "train.compile=true", "train.amp=true", "train.max_steps=10"
    )
    start = time.perf_counter()
    _, result = train_run(mods, config)
    seconds = time.perf_counter() - start
    checkpoint = mods["checkpoint"].load_checkpoint(tmp / "compiled" / "last.pt")
    prefixed = [k for k in checkpoint["model_state_dict"] if k.startswith("_orig_mod.")]
    assert not prefixed, prefixed[:3]
    bundle = mods["data"].build_data(config.data, config.train.seed)
    plain = mods["models"].build_model(config.model, bundle.spec)
    mods["checkpoint"].load_model_state(plain, checkpoint, "last.pt", config.to_dict())
    return {"run_seconds_incl_compile": seconds, "val_loss": result["loss"]}


def check_grad_checkpointing(mods: Mods, tmp: Path) -> dict[str, Any]:
    overrides = ["model.depth=5", "model.width=64", "data.image_size=128", "model.dropout=0.0"]
    result, grads = {}, {}
    for gc in (False, True):
        flag = f"model.grad_checkpointing={str(gc).lower()}"
        config = config_for(mods, tmp / "gc", *overrides, "train.batch_size=64", flag)
        torch.manual_seed(0)
        bundle = mods["data"].build_data(config.data, config.train.seed)
        model = mods["models"].build_model(config.model, bundle.spec).to(DEVICE)
        batch = next(iter(bundle_loader(mods, bundle, config)))
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
    plain, cut = result["plain"], result["checkpointed"]
    result["peak_cut"] = 1 - cut["peak_above_start_mib"] / plain["peak_above_start_mib"]
    result["max_abs_grad_difference"] = diff
    assert result["peak_cut"] > 0, result
    return result


def bundle_loader(mods: Mods, bundle: Any, config: Any) -> Any:
    loader, _, _ = mods["data"].build_loaders(bundle, config, mods["runtime"].DistInfo(), DEVICE)
    return (mods["engine"].to_device(batch, DEVICE) for batch in loader)


def check_pinned_memory(mods: Mods, tmp: Path) -> dict[str, Any]:
    config = config_for(mods, tmp / "pin", "data.image_size=224", "train.batch_size=64")
    bundle = mods["data"].build_data(config.data, config.train.seed)
    loader, _, _ = mods["data"].build_loaders(bundle, config, mods["runtime"].DistInfo(), DEVICE)
    batch = next(iter(loader))
    pinned = all(v.is_pinned() for v in batch.values())
    host = batch["inputs"]  # (B, C, H, W)
    pageable, locked = host.clone(), host.pin_memory()
    copies = {
        "pageable_blocking": lambda: pageable.to(DEVICE),
        "pinned_non_blocking": lambda: locked.to(DEVICE, non_blocking=True),
    }
    times = {
        name: median([synced_ms_per_step(f, 20) for _ in range(5)]) for name, f in copies.items()
    }
    same = torch.equal(mods["engine"].to_device(batch, DEVICE)["targets"].cpu(), batch["targets"])
    assert pinned and same, (pinned, same)
    mib = host.numel() * host.element_size() / 2**20
    return {"loader_pins_batches": pinned, "batch_mib": mib, "copy_ms": times}


def check_distributed(project: Path, package: str, tmp: Path, strategy: str) -> dict[str, Any]:
    if torch.cuda.device_count() < 2:
        return {"skipped": f"{torch.cuda.device_count()} GPU: {strategy} needs two or more"}
    overrides = ["train.max_steps=20", "train.epochs=1", f"train.out_dir={tmp / strategy}"]
    overrides += ["train.amp=true", "train.device=cuda"]
    overrides += ["train.strategy=fsdp"] if strategy == "fsdp" else []  # ddp: torchrun's default
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "-m", package]
    start = time.perf_counter()
    proc = run_project(project, [*command, "train", *set_args(overrides)], timeout=240)
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    suffix = ".dcp" if strategy == "fsdp" else ".pt"
    assert (tmp / strategy / f"last{suffix}").exists(), sorted(os.listdir(tmp / strategy))
    return {"seconds": seconds, "backend": "nccl", "stdout_tail": proc.stdout[-500:]}


def set_args(overrides: list[str]) -> list[str]:
    return [a for o in overrides for a in ("--set", o)]


def run_project(project: Path, command: list[str], **kwargs: Any) -> Any:
    env = dict(os.environ, PYTHONPATH=str(project / "src"))
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, **kwargs)


def check_resume_sigkill(project: Path, package: str, tmp: Path) -> dict[str, Any]:
    """Killed mid-epoch after its first step checkpoint (long enough on a GPU for the kill to
    land well before the end), resumed with train.resume=auto."""
    steps, every, samples = (200, 50, 4096) if DEVICE.type == "cuda" else (30, 10, 512)
    base = [f"train.max_steps={steps}", f"train.checkpoint_every={every}"]
    base += [f"train.device={DEVICE.type}", "train.epochs=2", f"data.num_samples={samples}"]
    base += ["train.deterministic=true"]
    train = [sys.executable, "-m", package, "train"]
    whole = run_project(project, [*train, *set_args([*base, f"train.out_dir={tmp / 'whole'}"])])
    assert whole.returncode == 0, whole.stderr[-3000:]
    out = tmp / "killed"
    env = dict(os.environ, PYTHONPATH=str(project / "src"))
    args = set_args([*base, f"train.out_dir={out}"])
    proc = subprocess.Popen([*train, *args], cwd=project, env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (out / f"step-{every:08d}.pt").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "no step checkpoint"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = torch.load(out / "last.pt", weights_only=True)["step"]
    assert every <= killed_at < steps, f"killed at step {killed_at}: not mid-run"
    resumed = run_project(project, [*train, *args, "--set", "train.resume=auto"])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    a, b = (torch.load(d / "last.pt", weights_only=True) for d in (tmp / "whole", out))
    same = all(
        torch.equal(x, y)
        for x, y in zip(a["model_state_dict"].values(), b["model_state_dict"].values(), strict=True)
    )
    assert a["step"] == b["step"] == steps and same, (a["step"], b["step"], same)
    return {"killed_at_step": killed_at, "bit_identical": same}


def check_step_time(projects: dict[str, Mods], tmp: Path, repeats: int, steps: int) -> dict:
    """Each project's default model and batch, one training step of its engine, in float32
    (matmuls at the default precision: TF32 on CUDA), bfloat16 and float16 AMP."""
    variants = {"fp32": ["train.amp=false"]}
    variants["bf16"] = ["train.amp=true", "train.amp_dtype=bfloat16"]
    variants["fp16"] = ["train.amp=true", "train.amp_dtype=float16"]
    report: dict[str, Any] = {}
    for kind, mods in projects.items():
        steps_by_variant, times = {}, {}
        for name, overrides in variants.items():
            config = config_for(mods, tmp / kind, *overrides)
            bundle = mods["data"].build_data(config.data, config.train.seed)
            model = mods["models"].build_model(config.model, bundle.spec).to(DEVICE)
            task = mods["tasks"].get_task(config.task).for_data(bundle.spec, bundle.state)
            amp = mods["runtime"].precision(DEVICE, config.train)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
            batch = next(iter(bundle_loader(mods, bundle, config)))
            step = training_step(mods["engine"], model, task, amp, optimizer, batch)
            synced_ms_per_step(step, 5)  # warm-up (cuDNN autotuning, allocator)
            steps_by_variant[name], times[name] = step, []
        for _ in range(repeats):  # interleaved rounds
            for name, step in steps_by_variant.items():
                times[name].append(synced_ms_per_step(step, steps))
        base = median(times["fp32"])
        report[kind] = {
            name: {"median_ms": median(t), "speedup_vs_fp32": base / median(t)}
            for name, t in times.items()
        }
    return report


def training_step(
    engine: ModuleType, model: Any, task: Any, amp: Any, optimizer: Any, batch: Any
) -> Callable[[], None]:
    def step() -> None:
        engine.forward_backward(model, batch, task, amp)
        engine.optimizer_step(optimizer, amp.scaler, 1.0)

    return step


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


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    out = os.environ.get("OUT")
    default_json = Path(out) / "cuda_check.json" if out else None
    parser.add_argument("--json", type=Path, default=default_json, help="where to write JSON")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved timing rounds")
    parser.add_argument("--timed-steps", type=int, default=20, help="steps per timed round")
    parser.add_argument("--only", nargs="+", metavar="CHECK", help="run only these checks")
    parser.add_argument(
        "--device", choices=("cuda", "cpu"), default="cuda", help="cpu: a dry run of the script"
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    global DEVICE
    if args.device == "cpu":
        DEVICE = torch.device("cpu")
    elif not torch.cuda.is_available():
        raise SystemExit("cuda_check: no CUDA device on this machine; nothing was checked")
    gpu = torch.cuda.get_device_name(0) if DEVICE.type == "cuda" else None
    count = torch.cuda.device_count() if DEVICE.type == "cuda" else 0
    capability = torch.cuda.get_device_capability(0) if DEVICE.type == "cuda" else None
    gpus = {"gpu": gpu, "gpus": count, "capability": capability}
    report: dict[str, Any] = {"machine": {**machine(), **gpus}}
    with tempfile.TemporaryDirectory(prefix="cuda-check-") as where:
        tmp = Path(where)
        image = generate(tmp / "image", "cudaimage")
        text = generate(tmp / "text", "cudatext", task="sequence-classification")
        fsdp = generate(tmp / "fsdp", "cudafsdp", features=("fsdp",)) if count > 1 else None
        mods = import_package(image, "cudaimage")
        projects = {"image": mods, "text": import_package(text, "cudatext")}
        checks: dict[str, Callable[[Path], dict[str, Any]]] = {
            "amp_bf16": lambda t: check_amp_bf16(mods, t),
            "amp_fp16": lambda t: check_amp_fp16(mods, t),
            "tf32": lambda t: check_tf32(mods, t),
            "compile": lambda t: check_compile(mods, t),
            "grad_checkpointing": lambda t: check_grad_checkpointing(mods, t),
            "pinned_memory": lambda t: check_pinned_memory(mods, t),
            "ddp": lambda t: check_distributed(image, "cudaimage", t, "ddp"),
            "fsdp": lambda t: check_distributed(fsdp or image, "cudafsdp", t, "fsdp"),
            "resume_sigkill": lambda t: check_resume_sigkill(image, "cudaimage", t),
            "step_time": lambda t: check_step_time(projects, t, args.repeats, args.timed_steps),
        }
        rows = []
        for name, check in checks.items():
            if args.only and name not in args.only:
                continue
            (tmp / name).mkdir()
            start = time.perf_counter()
            try:
                report[name], ok = check(tmp / name), True
            except Exception as exc:  # report every check, do not stop at the first
                error = f"{type(exc).__name__}: {exc}"
                report[name], ok = {"error": error, "traceback": traceback.format_exc()}, False
            status = "SKIP" if ok and "skipped" in report[name] else "PASS" if ok else "FAIL"
            rows.append([name, status, time.perf_counter() - start])
            print(f"{name}: {status} in {rows[-1][2]:.1f} s", flush=True)  # progress
    print_table(["check", "result", "seconds"], rows)
    for name in report:
        print(f"\n{name}: {json.dumps(report[name], default=str)[:600]}")
    report["ok"] = all(row[1] != "FAIL" for row in rows)
    write_json(args.json, report)
    raise SystemExit(0 if report["ok"] else 1)


if __name__ == "__main__":
    main()
