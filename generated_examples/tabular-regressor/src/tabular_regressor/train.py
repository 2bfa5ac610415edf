"""fit(): build everything from a Config, then train epoch by epoch. Reads top to bottom."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader

from . import checkpoint as ckpt
from .config import Config, config_from_dict, load_config
from .data import DataBundle, ResumableSampler, build_data, build_loaders
from .engine import StepSettings, TrainState, evaluate, train_one_epoch
from .models import build_model, unwrap
from .monitor import Reporter, progress
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
        run = build_run(config, info, device)
        return train_epochs(run)


@dataclass
class Run:
    """Everything a training run is made of, built once by `build_run`."""

    config: Config
    info: DistInfo
    out_dir: Path
    bundle: DataBundle
    model: nn.Module  # the plain module: what checkpoints hold
    train_model: nn.Module  # the same module, wrapped by DDP / torch.compile as configured
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    scaler: torch.amp.GradScaler
    loaders: tuple[DataLoader, DataLoader]
    sampler: ResumableSampler
    settings: StepSettings
    state: TrainState
    resumed: bool

    def save(self, name: str) -> None:
        """Checkpoint from rank 0 (never non-finite weights); every rank waits for it."""
        if self.info.is_main:
            payload = ckpt.training_payload(
                self.model,
                self.optimizer,
                self.scheduler,
                self.scaler,
                self.state,
                self.config.to_dict(),
                self.bundle.state,
            )
            payload["world_size"] = self.info.world_size
            ckpt.save_if_finite(self.out_dir / name, payload)
        barrier(self.info)


def build_run(config: Config, info: DistInfo, device: torch.device) -> Run:
    out_dir = Path(config.train.out_dir)
    resume = ckpt.resolve_resume(config.train.resume, out_dir, info.is_main)
    set_seed(config.train.seed, config.train.deterministic)
    bundle = build_data(
        config.data, config.train.seed, resume[1].get("data_state") if resume else None
    )
    model = build_model(config.model, bundle.spec).to(device)  # moved once, before the loop
    train_loader, val_loader, sampler = build_loaders(bundle, config, info, device)
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=config.train.lr,
        weight_decay=config.train.weight_decay,
        fused=device.type in ("cpu", "cuda"),  # one kernel for all tensors, not one per tensor
    )
    total_steps = config.train.epochs * (len(train_loader) // config.train.grad_accum_steps)
    scheduler = warmup_cosine(optimizer, config.train.warmup_steps, total_steps)
    dtype = amp_dtype(device, config.train.amp_dtype)
    scaler = make_grad_scaler(device, config.train.amp, dtype)
    state = TrainState()
    if resume:  # after everything is built, so restored RNG states are not disturbed
        path, checkpoint = resume
        position = ckpt.restore_training(
            checkpoint, path, model, optimizer, scheduler, scaler, config.to_dict(), info.world_size
        )
        state = TrainState(**position)
        if info.is_main:
            print(f"resuming from {path} at epoch {state.epoch + 1}, step {state.step}")
    autocast_ctx = functools.partial(autocast, device, config.train.amp, dtype)
    accum = config.train.grad_accum_steps
    settings = StepSettings(config.task, device, autocast_ctx, config.train.grad_clip, accum)
    train_model = prepare_model(model, config, info, device)
    return Run(
        config,
        info,
        out_dir,
        bundle,
        model,
        train_model,
        optimizer,
        scheduler,
        scaler,
        (train_loader, val_loader),
        sampler,
        settings,
        state,
        resume is not None,
    )


def train_epochs(run: Run) -> dict[str, Any]:
    """The epoch loop: train, evaluate, keep best.pt and last.pt, stop at max_steps."""
    config, state, info = run.config, run.state, run.info
    train_loader, val_loader = run.loaders
    reporter = Reporter(run)
    result: dict[str, Any] = {}
    while state.epoch < config.train.epochs:
        run.sampler.set_epoch(state.epoch, skip=state.batch_in_epoch * config.train.batch_size)
        desc = f"epoch {state.epoch + 1}/{config.train.epochs}"
        reporter.bar = progress(train_loader, len(train_loader), desc, info.is_main)
        stopped = train_one_epoch(
            run.train_model,
            reporter.bar,
            run.optimizer,
            run.scheduler,
            run.scaler,
            run.settings,
            state,
            reporter.after_step,
        )
        reporter.log()
        result = evaluate(unwrap(run.train_model), val_loader, run.settings, info)
        reporter.epoch_end(result)
        if not stopped:
            state.epoch, state.batch_in_epoch = state.epoch + 1, 0
        metric_name, _ = best_metric(config.task)
        if is_better(result[metric_name], state.best_metric, config.task):
            state.best_metric = result[metric_name]
            run.save("best.pt")
        run.save("last.pt")
        if stopped:
            break
    reporter.profiler.stop()
    return {**result, "step": state.step, "epoch": state.epoch}


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
