"""The optimizer, AdamW, and the learning-rate schedule: stepped once per
optimizer step, `train.warmup_steps` of linear warm-up first, spanning the planned run
(`train.epochs`, so a run stopped early and continued follows the same curve).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .config import TrainConfig

LRScheduler = torch.optim.lr_scheduler.LRScheduler


def build_optimizer(
    model: nn.Module, cfg: TrainConfig, device: torch.device
) -> torch.optim.Optimizer:
    """AdamW over the trainable parameters."""
    fused = device.type in ("cpu", "cuda")  # one kernel for all tensors, not one per tensor
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, fused=fused)


def build_scheduler(
    optimizer: torch.optim.Optimizer, cfg: TrainConfig, steps_per_epoch: int
) -> LRScheduler:
    """A LambdaLR of `LrFactor`."""
    total = max(cfg.epochs * steps_per_epoch, 1)
    factor = LrFactor(cfg.scheduler, cfg.warmup_steps, total)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def replan(scheduler: LRScheduler, cfg: TrainConfig, steps_per_epoch: int) -> list[str]:
    """A restored schedule stretched to the run's planned length now (train.epochs or the
    steps per epoch changed): cosine decays to 0 at the new end.
    Returns what changed, to be said."""
    total = max(cfg.epochs * steps_per_epoch, 1)
    factor = scheduler.lr_lambdas[0]
    if not isinstance(factor, LrFactor) or factor.total == total:
        return []
    old, factor.total = factor.total, total
    for group, base in zip(scheduler.optimizer.param_groups, scheduler.base_lrs, strict=True):
        group["lr"] = base * factor(scheduler.last_epoch)
    if factor.shape not in ("cosine", "step"):  # the others do not depend on the length
        return []
    return [f"the {factor.shape} schedule spans {total} steps (was {old})"]


class LrFactor:
    """The lr at a step as a multiple of train.lr: linear warm-up, then cosine decay to 0
    or constant. An object: LambdaLR saves its attributes, so a resume keeps the schedule."""

    def __init__(self, shape: str, warmup: int, total: int) -> None:
        self.shape, self.warmup, self.total = shape, warmup, total

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return (step + 1) / self.warmup
        if self.shape == "constant":
            return 1.0
        progress = (step - self.warmup) / max(self.total - self.warmup, 1)
        return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))
