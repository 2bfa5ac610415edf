"""The optimizer and the learning-rate schedule that `train.optimizer` and `train.scheduler`
name.

Every schedule steps once per optimizer step, starts with `train.warmup_steps` of linear
warm-up, spans the whole planned run (`train.epochs`, not `train.max_steps`, so a run
stopped early and continued follows the same curve) and is saved in every checkpoint.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from .config import ConfigError, TrainConfig

LRScheduler = torch.optim.lr_scheduler.LRScheduler


def build_optimizer(
    model: nn.Module, cfg: TrainConfig, device: torch.device
) -> torch.optim.Optimizer:
    """adamw (decoupled weight decay), adam (L2 weight decay) or sgd (momentum, Nesterov)."""
    fused = device.type in ("cpu", "cuda")  # one kernel for all tensors, not one per tensor
    params, decay = parameter_groups(model, cfg), cfg.weight_decay
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(
            params, cfg.lr, cfg.momentum, weight_decay=decay, nesterov=cfg.nesterov, fused=fused
        )
    kind = torch.optim.AdamW if cfg.optimizer == "adamw" else torch.optim.Adam
    return kind(params, lr=cfg.lr, weight_decay=decay, fused=fused)


def parameter_groups(model: nn.Module, cfg: TrainConfig) -> list[dict[str, Any]]:
    """The trainable parameters (model.freeze leaves some out) in one group; with
    train.head_lr_multiplier != 1, the head (the model's last top-level module with
    parameters: `classifier` in the generated models) in a group of its own at that
    multiple of train.lr."""
    trainable = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    if cfg.head_lr_multiplier == 1.0:
        return [{"params": [p for _, p in trainable]}]
    with_params = [name for name, part in model.named_children() if list(part.parameters())]
    head = with_params[-1]
    body = [p for name, p in trainable if not name.startswith(f"{head}.")]
    in_head = [p for name, p in trainable if name.startswith(f"{head}.")]
    groups = [{"params": body}, {"params": in_head, "lr": cfg.lr * cfg.head_lr_multiplier}]
    return [group for group in groups if group["params"]]


def build_scheduler(
    optimizer: torch.optim.Optimizer, cfg: TrainConfig, steps_per_epoch: int
) -> LRScheduler:
    """onecycle is torch's OneCycleLR (its rise is the warm-up: train.warmup_steps, or 30%
    of the run when that is 0); the others are a LambdaLR of `LrFactor`."""
    total = max(cfg.epochs * steps_per_epoch, 1)
    if cfg.scheduler == "onecycle":
        rise = min(cfg.warmup_steps / total, 1.0) if cfg.warmup_steps else 0.3
        peaks = [group["lr"] for group in optimizer.param_groups]  # the head's may differ
        return torch.optim.lr_scheduler.OneCycleLR(
            optimizer, peaks, total_steps=total, pct_start=rise, cycle_momentum=False
        )
    step_every = max(steps_per_epoch, 1) * cfg.lr_step_epochs
    factor = LrFactor(cfg.scheduler, cfg.warmup_steps, total, step_every, cfg.lr_gamma)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def replan(scheduler: LRScheduler, cfg: TrainConfig, steps_per_epoch: int) -> list[str]:
    """A restored schedule stretched to the run's planned length now (train.epochs or the
    steps per epoch changed): cosine decays to 0 at the new end, the step schedule drops
    every lr_step_epochs of the new epochs. Returns what changed, to be said; onecycle's
    phases are fixed, so another length is refused."""
    total = max(cfg.epochs * steps_per_epoch, 1)
    if isinstance(scheduler, torch.optim.lr_scheduler.OneCycleLR):
        if scheduler.total_steps != total:
            raise ConfigError(
                f"the onecycle schedule was planned for {scheduler.total_steps} steps, now "
                f"{total} (train.epochs x {steps_per_epoch} steps per epoch); keep "
                "train.epochs and train.batch_size, or train anew in another train.out_dir"
            )
        return []
    factor = scheduler.lr_lambdas[0]
    if not isinstance(factor, LrFactor) or factor.total == total:
        return []
    old, factor.total = factor.total, total
    factor.step_every = max(steps_per_epoch, 1) * cfg.lr_step_epochs
    for group, base in zip(scheduler.optimizer.param_groups, scheduler.base_lrs, strict=True):
        group["lr"] = base * factor(scheduler.last_epoch)
    if factor.shape not in ("cosine", "step"):  # the others do not depend on the length
        return []
    return [f"the {factor.shape} schedule spans {total} steps (was {old})"]


class LrFactor:
    """The learning rate at an optimizer step, as a multiple of train.lr: linear warm-up,
    then cosine decay to 0, a drop by `gamma` every `step_every` steps (step), or `scale`
    (plateau: lowered by `lower_lr`; constant: always 1).

    An object rather than a function because LambdaLR saves an object's attributes with
    the scheduler's state: a resumed run keeps the schedule it started with, and the
    plateau drops made so far.
    """

    def __init__(self, shape: str, warmup: int, total: int, step_every: int, gamma: float) -> None:
        self.shape, self.warmup, self.total = shape, warmup, total
        self.step_every, self.gamma = step_every, gamma
        self.scale = 1.0

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return (step + 1) / self.warmup
        if self.shape == "cosine":
            progress = (step - self.warmup) / max(self.total - self.warmup, 1)
            return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))
        if self.shape == "step":
            return self.gamma ** ((step - self.warmup) // self.step_every)
        return self.scale


def lower_lr(scheduler: LRScheduler) -> None:
    """The plateau schedule's drop: multiply the learning rate by train.lr_gamma from now on."""
    factor = scheduler.lr_lambdas[0]
    factor.scale *= factor.gamma
    for group, base in zip(scheduler.optimizer.param_groups, scheduler.base_lrs, strict=True):
        group["lr"] = base * factor(scheduler.last_epoch)
