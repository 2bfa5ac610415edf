"""The pieces of training and evaluation that train.py's loop calls. Nothing here reads a
value back from the device on the hot path: the loop decides when to look at the losses.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader

from .runtime import DistInfo, Precision, all_reduce_sum
from .tasks import Task

Batch = dict[str, torch.Tensor]


def to_device(batch: Batch, device: torch.device) -> Batch:
    # non_blocking pairs with pin_memory on CUDA; it is a plain copy elsewhere
    return {key: value.to(device, non_blocking=True) for key, value in batch.items()}


def model_inputs(batch: Batch) -> Batch:
    """Everything in the batch except the targets is passed to the model by name."""
    return {key: value for key, value in batch.items() if key != "targets"}


def forward_backward(
    model: nn.Module, batch: Batch, task: Task, precision: Precision, parts: int = 1
) -> torch.Tensor:
    """Forward and backward of one of an optimizer step's `parts` batches; the loss, detached."""
    with precision.autocast():
        outputs = model(**model_inputs(batch))
        loss = task.loss(outputs, batch["targets"])
    part = loss / parts if parts > 1 else loss  # dividing by 1 costs a kernel and its backward
    precision.scaler.scale(part).backward()  # a disabled scaler passes through
    return loss.detach()


def optimizer_step(
    optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler, grad_clip: float
) -> None:
    """Clip (the true, unscaled gradients), step, and clear the gradients."""
    if grad_clip > 0:
        scaler.unscale_(optimizer)
        # the optimizer's own list: cheaper than walking model.parameters() every step
        params = [p for group in optimizer.param_groups for p in group["params"]]
        nn.utils.clip_grad_norm_(params, grad_clip)
    scaler.step(optimizer)  # skipped by the scaler when gradients are inf/NaN
    scaler.update()
    optimizer.zero_grad(set_to_none=True)


def no_sync(model: nn.Module) -> contextlib.AbstractContextManager:
    """No gradient sync for this batch: DDP's no_sync (also under torch.compile), or none."""
    return getattr(model, "no_sync", contextlib.nullcontext)()


@torch.no_grad()
def evaluate(
    model: nn.Module,
    loader: DataLoader,
    task: Task,
    precision: Precision,
    info: DistInfo,
    details: bool = False,
    stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Loss and task metrics over the loader (all ranks together) in eval mode; `details`:
    per class too. `stop`, asked after every batch, ends it there (the loop then stops)."""
    device = precision.device
    was_training = model.training
    model.eval()  # dropout off, batch-norm running statistics
    totals = {"loss": torch.zeros((), device=device), "count": torch.zeros((), device=device)}
    totals.update(task.zero_sums(device))
    for batch in loader:
        batch = to_device(batch, device)
        with precision.autocast():
            outputs = model(**model_inputs(batch))
            loss = task.loss(outputs, batch["targets"])
        n = batch["targets"].shape[0]
        totals["loss"] += loss.float() * n
        totals["count"] += n
        for key, value in task.metric_sums(outputs, batch["targets"]).items():
            totals[key] += value
        if stop is not None and stop():
            break
    model.train(was_training)
    # read back once, after the loop: the only host syncs of an evaluation
    sums = {key: all_reduce_sum(value, info).cpu() for key, value in totals.items()}
    count = int(sums.pop("count"))
    result = {"loss": float(sums.pop("loss")) / max(count, 1), "num_samples": count}
    result.update(task.summarise(sums, count))
    if details:
        result.update(task.details(sums))
    return result
