"""`python -m <package> smoke`: prove in seconds that this project trains. Each check is
timed and reported on one line: a few steps with the configured options; the loss falls
on one batch; evaluation runs in eval mode; a checkpoint reloads (`weights_only`) and resumes.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader

from . import checkpoint as ckpt
from .config import Config
from .data import build_data, build_loaders
from .engine import evaluate, forward_backward, optimizer_step, to_device
from .models import build_model
from .runtime import DistInfo, Precision, get_device, precision, set_seed
from .tasks import Task, get_task
from .train import fit


def smoke_config(config: Config, steps: int, out_dir: Path) -> Config:
    """The user's config, shrunk: tiny synthetic data (when no root), a few steps, a temp dir."""
    batch_size = min(config.train.batch_size, 16)
    data = config.data
    if hasattr(data, "num_samples"):  # synthetic data (also the fallback without a root)
        data = dataclasses.replace(data, num_samples=batch_size * (steps + 3))
    train = dataclasses.replace(
        config.train, batch_size=batch_size, epochs=1, max_steps=steps, log_every=1
    )
    train = dataclasses.replace(train, checkpoint_every=0, out_dir=str(out_dir), resume="")
    return dataclasses.replace(config, data=data, train=train)


def stage_train(config: Config) -> str:
    result = fit(config)
    if not math.isfinite(result["loss"]):
        raise AssertionError(f"validation loss is {result['loss']}")
    return f"{result['step']} steps, val loss {result['loss']:.4f}"


def fresh_model(config: Config) -> tuple[Precision, nn.Module, DataLoader, DataLoader, Task]:
    """A new model on its device, the training and validation loaders, and the task."""
    set_seed(config.train.seed)
    device = get_device(config.train.device)
    bundle = build_data(config.data, config.train.seed)
    model = build_model(config.model, bundle.spec).to(device)
    train_loader, val_loader, _ = build_loaders(bundle, config, DistInfo(), device)
    amp = precision(device, config.train)
    task = get_task(config.task, config.train.monitor).for_data(bundle.spec, bundle.state)
    return amp, model, train_loader, val_loader, task


def stage_overfit(config: Config, steps: int = 20, batch_size: int = 8) -> str:
    amp, model, train_loader, _, task = fresh_model(config)
    batch = {k: v[:batch_size] for k, v in to_device(next(iter(train_loader)), amp.device).items()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(steps):
        losses.append(float(forward_backward(model, batch, task, amp)))
        optimizer_step(optimizer, amp.scaler, config.train.grad_clip)
    first, last = losses[0], min(losses[-3:])
    if not (math.isfinite(last) and last < 0.7 * first):
        raise AssertionError(f"loss did not fall on one batch: {first:.4f} -> {last:.4f}")
    return f"one batch of {batch_size}, {steps} steps: loss {first:.4f} -> {last:.4f}"


def stage_evaluate(config: Config) -> str:
    amp, model, _, val_loader, task = fresh_model(config)
    modes: list[bool] = []
    hook = model.register_forward_pre_hook(lambda module, args: modes.append(module.training))
    model.train()
    result = evaluate(model, val_loader, task, amp, DistInfo())
    hook.remove()
    if not modes or any(modes) or not model.training:
        raise AssertionError("evaluation did not run in eval mode, or did not restore train mode")
    return f"{result['num_samples']} samples in eval mode, loss {result['loss']:.4f}"


def stage_checkpoint(config: Config) -> str:
    path = ckpt.named_checkpoints(Path(config.train.out_dir), "last")[0]
    checkpoint = ckpt.load_checkpoint(path)  # weights_only=True
    weights = checkpoint["model_state_dict"]
    prefixed = [k for k in weights if k.startswith(("_orig_mod.", "module."))]
    if prefixed:
        raise AssertionError(f"state dict keys carry wrapper prefixes: {prefixed[:3]}")
    target = checkpoint["step"] + 2
    # More epochs so a small real dataset can reach the target; compile off to show that
    # a checkpoint from a compiled model loads into a plain one.
    train = dataclasses.replace(
        config.train, resume="auto", max_steps=target, epochs=target, compile=False
    )
    result = fit(dataclasses.replace(config, train=train))
    if result["step"] != target:
        raise AssertionError(f"resumed run ended at step {result['step']}, expected {target}")
    return f"reloaded step {checkpoint['step']} (weights_only), resumed to step {result['step']}"


def run_stages(config: Config, steps: int) -> list[dict[str, Any]]:
    """Run every stage in order, stopping at the first failure."""
    with tempfile.TemporaryDirectory(prefix="smoke-") as tmp:
        cfg = smoke_config(config, steps, Path(tmp))
        stages: list[tuple[str, Callable[[Config], str]]] = [
            ("train", stage_train),
            ("overfit", stage_overfit),
            ("evaluate", stage_evaluate),
            ("checkpoint", stage_checkpoint),
        ]
        results = []
        for name, stage in stages:
            start = time.perf_counter()
            try:
                detail, ok = stage(cfg), True
            except Exception as exc:  # report any failure as the stage's result
                detail, ok = f"{type(exc).__name__}: {exc}", False
            seconds = round(time.perf_counter() - start, 3)
            results.append({"name": name, "ok": ok, "seconds": seconds, "detail": detail})
            if not ok:
                break
        return results


def run_smoke(config: Config, steps: int, as_json: bool) -> int:
    results = run_stages(config, steps)
    ok = len(results) == 4 and all(r["ok"] for r in results)
    if as_json:
        print(json.dumps({"ok": ok, "stages": results}))
    else:
        for r in results:
            mark = "PASS" if r["ok"] else "FAIL"
            print(f"{mark} {r['name']:<10} {r['seconds']:7.2f}s  {r['detail']}")
    return 0 if ok else 1
