"""The optimizers and schedules besides AdamW and cosine/constant (the `optim` feature).

`train.optimizer`: adamw, adam (L2 weight decay) or sgd (`train.momentum`,
`train.nesterov`); `train.head_lr_multiplier` trains the head at its own learning rate.
`train.scheduler`: onecycle (torch's OneCycleLR), step (the learning rate times
`train.lr_gamma` every `train.lr_step_epochs`) or plateau (times `train.lr_gamma` after
`train.lr_patience` evaluations without improvement; the training loop calls `lower_lr`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .config import ConfigError, TrainConfig


def other_optimizer(model: nn.Module, cfg: TrainConfig, fused: bool) -> torch.optim.Optimizer:
    """adamw (decoupled weight decay), adam (L2 weight decay) or sgd (momentum, Nesterov)."""
    params, decay = parameter_groups(model, cfg), cfg.weight_decay
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(
            params, cfg.lr, cfg.momentum, weight_decay=decay, nesterov=cfg.nesterov, fused=fused
        )
    kind = torch.optim.AdamW if cfg.optimizer == "adamw" else torch.optim.Adam
    return kind(params, lr=cfg.lr, weight_decay=decay, fused=fused)


def parameter_groups(model: nn.Module, cfg: TrainConfig) -> list[dict[str, Any]]:
    """The trainable parameters in one group; with train.head_lr_multiplier != 1, the head
    (the model's last top-level module with parameters: `classifier` in the generated
    models) in a group of its own at that multiple of train.lr."""
    trainable = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    if cfg.head_lr_multiplier == 1.0:
        return [{"params": [p for _, p in trainable]}]
    with_params = [name for name, part in model.named_children() if list(part.parameters())]
    head = with_params[-1]
    body = [p for name, p in trainable if not name.startswith(f"{head}.")]
    in_head = [p for name, p in trainable if name.startswith(f"{head}.")]
    groups = [{"params": body}, {"params": in_head, "lr": cfg.lr * cfg.head_lr_multiplier}]
    return [group for group in groups if group["params"]]


class OneCycle(torch.optim.lr_scheduler.OneCycleLR):
    """torch's OneCycleLR; its rise is the warm-up: train.warmup_steps, or 30% of the run."""

    def __init__(self, optimizer: torch.optim.Optimizer, cfg: TrainConfig, total: int) -> None:
        rise = min(cfg.warmup_steps / total, 1.0) if cfg.warmup_steps else 0.3
        peaks = [group["lr"] for group in optimizer.param_groups]  # the head's may differ
        super().__init__(optimizer, peaks, total_steps=total, pct_start=rise, cycle_momentum=False)

    def replan(self, total: int, steps_per_epoch: int) -> list[str]:
        """The phases are fixed: another planned length is refused."""
        if self.total_steps != total:
            raise ConfigError(
                f"the onecycle schedule was planned for {self.total_steps} steps, now {total} "
                f"(train.epochs x {steps_per_epoch} steps per epoch); keep train.epochs and "
                "train.batch_size, or train anew with --set train.out_dir=ANOTHER_DIR"
            )
        return []


class LrDrop:
    """The learning rate as a multiple of train.lr: linear warm-up, then a drop by `gamma`
    every `step_every` steps (step), or `scale` (plateau: lowered by `lower_lr`). Saved with
    the scheduler (LambdaLR keeps an object's attributes), plateau drops included."""

    def __init__(self, shape: str, warmup: int, total: int, step_every: int, gamma: float) -> None:
        self.shape, self.warmup, self.total = shape, warmup, total
        self.step_every, self.gamma, self.scale = step_every, gamma, 1.0

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return (step + 1) / self.warmup
        if self.shape == "step":
            return self.gamma ** ((step - self.warmup) // self.step_every)
        return self.scale


def lower_lr(scheduler: torch.optim.lr_scheduler.LambdaLR) -> None:
    """The plateau schedule's drop: multiply the learning rate by train.lr_gamma from now on."""
    factor = scheduler.lr_lambdas[0]
    factor.scale *= factor.gamma
    for group, base in zip(scheduler.optimizer.param_groups, scheduler.base_lrs, strict=True):
        group["lr"] = base * factor(scheduler.last_epoch)
