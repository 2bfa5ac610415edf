"""fit(): build everything from a Config, then train epoch by epoch. Reads top to bottom."""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import torch
from torch import nn

from . import checkpoint as ckpt
from .config import Config, ConfigError, config_from_dict, load_config, to_toml
from .data import build_data, build_loaders
from .engine import StepSettings, TrainState, evaluate, train_one_epoch
from .models import build_model, unwrap
from .monitor import LossWindow, MetricsFile, format_metrics, progress
from .runtime import (
    DistInfo,
    amp_dtype,
    autocast,
    barrier,
    distributed,
    get_device,
    make_grad_scaler,
    set_seed,
)
from .tasks import best_metric


def fit(config: Config) -> dict[str, Any]:
    """Train as configured (single process, or every rank under torchrun)."""
    with distributed(config.train.device) as (info, device):
        return _fit(config, info, device)


def _fit(config: Config, info: DistInfo, device: torch.device) -> dict[str, Any]:
    out_dir = Path(config.train.out_dir)
    resume = resolve_resume(config, out_dir, info)
    set_seed(config.train.seed, config.train.deterministic)

    data_state = resume[1].get("data_state") if resume else None
    bundle = build_data(config.data, config.train.seed, data_state)
    model = build_model(config.model, bundle.spec).to(device)  # moved once, before the loop
    train_loader, val_loader, sampler = build_loaders(bundle, config, info, device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.train.lr, weight_decay=config.train.weight_decay
    )
    scheduler = warmup_cosine(
        optimizer, config.train.warmup_steps, config.train.epochs * len(train_loader)
    )
    dtype = amp_dtype(device, config.train.amp_dtype)
    scaler = make_grad_scaler(device, config.train.amp, dtype)

    state = TrainState()
    if resume:
        position = ckpt.restore_training(
            resume[1], resume[0], model, optimizer, scheduler, scaler, config.to_dict()
        )
        state = TrainState(**position)
        if info.is_main:
            print(f"resuming from {resume[0]} at epoch {state.epoch + 1}, step {state.step}")

    train_model = prepare_model(model, config, info, device)
    settings = StepSettings(
        config.task,
        device,
        functools.partial(autocast, device, config.train.amp, dtype),
        config.train.grad_clip,
    )
    if info.is_main:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "config.toml").write_text(to_toml(config), encoding="utf-8")
    metrics = MetricsFile(out_dir / "metrics.csv", state.step if resume else None, info.is_main)
    window = LossWindow(device)
    metric_name, _ = best_metric(config.task)

    def save(name: str) -> None:
        if info.is_main:
            payload = ckpt.training_payload(
                model, optimizer, scheduler, scaler, state, config.to_dict(), bundle.state
            )
            ckpt.save_checkpoint(out_dir / name, payload)
        barrier(info)  # no rank runs ahead of a checkpoint

    def log() -> None:
        values = window.flush(config.train.batch_size * info.world_size, config.train.on_nonfinite)
        if values:
            metrics.write(
                step=state.step,
                epoch=state.epoch + 1,
                split="train",
                lr=scheduler.get_last_lr()[0],
                **values,
            )
            if hasattr(batches, "set_postfix"):
                batches.set_postfix(
                    loss=f"{values['loss']:.4f}", samples_s=f"{values['samples_per_sec']:.0f}"
                )

    def after_step(loss: torch.Tensor) -> bool:
        window.add(loss, state.step)
        done = 0 < config.train.max_steps <= state.step
        every = config.train.checkpoint_every
        if state.step % config.train.log_every == 0 or done or (every and state.step % every == 0):
            log()  # also checks the losses are finite before anything is saved
        if every and state.step % every == 0 and not done:
            save("last.pt")
            save(f"step-{state.step:08d}.pt")
            if info.is_main:
                ckpt.prune_step_checkpoints(out_dir, config.train.keep_last)
        return done

    result: dict[str, Any] = {}
    while state.epoch < config.train.epochs:
        sampler.set_epoch(state.epoch, skip=state.batch_in_epoch * config.train.batch_size)
        batches = progress(
            train_loader,
            len(train_loader),
            f"epoch {state.epoch + 1}/{config.train.epochs}",
            info.is_main,
        )
        stopped = train_one_epoch(
            train_model, batches, optimizer, scheduler, scaler, settings, state, after_step
        )
        log()
        result = evaluate(unwrap(train_model), val_loader, settings, info)
        metrics.write(step=state.step, epoch=state.epoch + 1, split="val", **result)
        if info.is_main:
            print(
                f"epoch {state.epoch + 1}/{config.train.epochs} step {state.step}: "
                f"{format_metrics(result)}"
            )
        if not stopped:
            state.epoch, state.batch_in_epoch = state.epoch + 1, 0
        if is_better(result[metric_name], state.best_metric, config.task):
            state.best_metric = result[metric_name]
            save("best.pt")
        save("last.pt")
        if stopped:
            break
    return {**result, "step": state.step, "epoch": state.epoch}


def resolve_resume(
    config: Config, out_dir: Path, info: DistInfo
) -> tuple[Path, dict[str, Any]] | None:
    """train.resume: "" fresh (refuses to clobber a run), auto (newest valid), or a path."""
    choice = config.train.resume
    if choice == "":
        if (out_dir / "last.pt").exists():
            raise ConfigError(
                f"{out_dir} already holds a run; continue it with --set train.resume=auto "
                "or choose another --set train.out_dir=..."
            )
        return None
    if choice == "auto":
        found = ckpt.find_resume_checkpoint(out_dir)
        if found is None and info.is_main:
            print(f"no checkpoint in {out_dir}; starting a fresh run")
        return found
    return Path(choice), ckpt.load_checkpoint(choice)


def warmup_cosine(
    optimizer: torch.optim.Optimizer, warmup: int, total: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up then cosine decay over the whole planned run (not max_steps,
    so a run stopped early and continued follows the same schedule)."""

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress_ = (step - warmup) / max(total - warmup, 1)
        return 0.5 * (1.0 + math.cos(math.pi * min(progress_, 1.0)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def prepare_model(
    model: nn.Module, config: Config, info: DistInfo, device: torch.device
) -> nn.Module:
    """DDP first, then torch.compile (the order the PyTorch docs recommend)."""
    if info.enabled:
        ids = [device.index] if device.type == "cuda" else None
        model = nn.parallel.DistributedDataParallel(model, device_ids=ids)
    if config.train.compile:
        model = torch.compile(model, mode=config.train.compile_mode)
    return model


def is_better(value: float, best: float | None, task: str) -> bool:
    _, mode = best_metric(task)
    return best is None or (value < best if mode == "min" else value > best)


def evaluate_checkpoint(path: str, config_file: str | None, overrides: list[str]) -> dict[str, Any]:
    """Evaluate a checkpoint with the config it was trained with (plus any overrides)."""
    checkpoint = ckpt.load_checkpoint(path)
    config = load_config(config_file, overrides, base=config_from_dict(checkpoint["config"]))
    device = get_device(config.train.device)
    bundle = build_data(config.data, config.train.seed, checkpoint.get("data_state"))
    model = build_model(config.model, bundle.spec)
    ckpt.load_model_state(model, checkpoint, path, config.to_dict())
    model.to(device)
    _, val_loader, _ = build_loaders(bundle, config, DistInfo(), device)
    dtype = amp_dtype(device, config.train.amp_dtype)
    settings = StepSettings(
        config.task, device, functools.partial(autocast, device, config.train.amp, dtype), 0.0
    )
    return evaluate(model, val_loader, settings, DistInfo())
