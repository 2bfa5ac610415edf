"""Skewed classes (the `imbalance` feature): loss weights and a balanced sampler.

`train.class_weights=auto` weighs the cross-entropy by inverse class frequency in the
training split (saved in every checkpoint, so a resumed run and `evaluate` use the same
weights); `data.balanced_sampler=true` draws training samples with replacement, every
class equally often, from (seed, epoch) alone, so resumes stay exact and torchrun's
processes draw disjoint shares of the same order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from .config import Config
from .tasks import Classification


def balance(
    task: Classification,
    config: Config,
    targets: Callable[[], torch.Tensor],
    saved: torch.Tensor | None,
    device: torch.device,
) -> tuple[Classification, torch.Tensor | None]:
    """The task with the loss weights of train.class_weights=auto (a resumed run's `saved`
    weights, else n / (K * count) from the training `targets`: 1 for balanced classes, 0
    for a class without samples), and the per-sample weights of data.balanced_sampler (None:
    plain shuffling)."""
    weights, per_sample = None, None
    if config.train.class_weights == "auto" or config.data.balanced_sampler:
        labels = targets()
        counts = torch.bincount(labels, minlength=task.num_classes).float()  # (K,)
        if config.train.class_weights == "auto":
            balanced = len(labels) / (len(counts) * counts.clamp(min=1)) * (counts > 0)
            weights = (balanced if saved is None else saved).to(device)
        if config.data.balanced_sampler:
            per_sample = 1.0 / counts[labels]  # (N,) each class drawn equally often
    return dataclasses.replace(task, class_weights=weights), per_sample
