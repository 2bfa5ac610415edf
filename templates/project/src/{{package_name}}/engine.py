"""One training step, one epoch, one evaluation pass.

The hot loop never reads a value back from the device: losses stay tensors and the
caller decides when to look at them (at log intervals and checkpoints).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from . import tasks
from .runtime import DistInfo, all_reduce_sum

Batch = dict[str, torch.Tensor]


@dataclass
class TrainState:
    """Where training is; saved in every checkpoint."""

    epoch: int = 0  # current epoch, counted from 0
    step: int = 0  # optimiser steps done so far
    batch_in_epoch: int = 0  # batches of the current epoch already trained on
    best_metric: float | None = None  # best validation metric so far


@dataclass
class StepSettings:
    task: str
    device: torch.device
    autocast: Callable[[], contextlib.AbstractContextManager]
    grad_clip: float
    grad_accum_steps: int = 1  # batches whose gradients add up to one optimiser step


def to_device(batch: Batch, device: torch.device) -> Batch:
    # non_blocking pairs with pin_memory on CUDA; it is a plain copy elsewhere
    return {key: value.to(device, non_blocking=True) for key, value in batch.items()}


def model_inputs(batch: Batch) -> dict[str, torch.Tensor]:
    """Everything in the batch except the targets is passed to the model by name."""
    return {key: value for key, value in batch.items() if key != "targets"}


def train_step(
    model: nn.Module,
    batch: Batch,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    settings: StepSettings,
) -> torch.Tensor:
    """Forward, backward, clip, step. Returns the loss as a detached device tensor."""
    optimizer.zero_grad(set_to_none=True)
    loss = backward(model, batch, scaler, settings, 1)
    optimizer_step(optimizer, scaler, settings)
    return loss


def backward(
    model: nn.Module, batch: Batch, scaler: torch.amp.GradScaler, settings: StepSettings, parts: int
) -> torch.Tensor:
    """Forward and backward of one of `parts` batches that make up an optimiser step."""
    with settings.autocast():
        outputs = model(**model_inputs(batch))
        loss = tasks.loss_fn(settings.task, outputs, batch["targets"])
    scaler.scale(loss / parts).backward()  # a disabled scaler (no CUDA float16) passes through
    return loss.detach()


def optimizer_step(
    optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler, settings: StepSettings
) -> None:
    if settings.grad_clip > 0:
        scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
        # the optimizer's own list: cheaper than walking model.parameters() every step
        params = [p for group in optimizer.param_groups for p in group["params"]]
        nn.utils.clip_grad_norm_(params, settings.grad_clip)
    scaler.step(optimizer)  # skipped by the scaler when gradients are inf/NaN
    scaler.update()


def train_one_epoch(
    model: nn.Module,
    batches: Iterable[Batch],
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    scaler: torch.amp.GradScaler,
    settings: StepSettings,
    state: TrainState,
    after_step: Callable[[torch.Tensor], bool],
) -> bool:
    """Train until the batches run out or `after_step` asks to stop (returns True then).

    With grad_accum_steps=k every k batches make one optimiser step; under DDP the first
    k-1 skip the gradient all-reduce (`no_sync`). An incomplete group at the end of the
    epoch is dropped.
    """
    model.train()
    parts, losses = settings.grad_accum_steps, []
    optimizer.zero_grad(set_to_none=True)
    for batch in batches:
        batch, last = to_device(batch, settings.device), len(losses) + 1 == parts
        with contextlib.nullcontext() if last else no_sync(model):
            losses.append(backward(model, batch, scaler, settings, parts))
        state.batch_in_epoch += 1
        if not last:
            continue
        optimizer_step(optimizer, scaler, settings)
        optimizer.zero_grad(set_to_none=True)
        scheduler.step()
        state.step += 1
        loss, losses = torch.stack(losses).mean(), []
        if after_step(loss):
            return True
    return False


def no_sync(model: nn.Module) -> contextlib.AbstractContextManager:
    """DDP's no_sync (also through torch.compile's wrapper); a no-op for a plain module."""
    return getattr(model, "no_sync", contextlib.nullcontext)()


@torch.no_grad()
def evaluate(
    model: nn.Module, loader: Iterable[Batch], settings: StepSettings, info: DistInfo
) -> dict[str, Any]:
    """Loss and task metrics over the whole loader (all ranks together), in eval mode."""
    was_training = model.training
    model.eval()  # dropout off, batch-norm running statistics
    loss_sum = torch.zeros((), device=settings.device)
    count = torch.zeros((), device=settings.device)
    names = tasks.sum_keys(settings.task)
    sums = {key: torch.zeros((), device=settings.device) for key in names}
    for batch in loader:
        batch = to_device(batch, settings.device)
        with settings.autocast():
            outputs = model(**model_inputs(batch))
            loss = tasks.loss_fn(settings.task, outputs, batch["targets"])
        n = batch["targets"].shape[0]
        loss_sum += loss.float() * n
        count += n
        for key, value in tasks.metric_sums(settings.task, outputs, batch["targets"]).items():
            sums[key] += value.float()
    model.train(was_training)
    totals = all_reduce_sum(torch.stack([loss_sum, count, *[sums[k] for k in names]]), info)
    loss_total, num, *metric_totals = totals.tolist()  # the one host sync of evaluation
    result = {"loss": loss_total / max(num, 1), "num_samples": int(num)}
    sums_by_name = dict(zip(names, metric_totals, strict=True))
    result.update(tasks.summarise(settings.task, sums_by_name, int(num)))
    return result
