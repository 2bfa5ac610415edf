"""What this project learns: sequence-classification.

The task is one object: its loss, the metric sums it accumulates on the device during
evaluation and the numbers they become, the validation metric that picks best.pt (and
whether higher is better), and the metric columns of metrics.csv. `get_task(name)` looks
it up; an unknown name is an error. `DataSpec` is what a model needs to know about the
data, filled in by the dataset.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .config import Config, ConfigError


@dataclass(frozen=True)
class DataSpec:
    num_outputs: int  # number of classes
    vocab_size: int = 1000  # token ids are 0..vocab_size-1; 0 is padding


@dataclass(frozen=True)
class Classification:
    """Class scores (B, num_classes) against class indices (B,): cross-entropy, accuracy."""

    name: str
    monitor: str = "accuracy"  # the validation metric that picks best.pt
    higher_is_better: bool = True
    metrics: tuple[str, ...] = ("accuracy",)  # reported besides the loss
    sums: tuple[str, ...] = ("correct",)  # what `metric_sums` accumulates
    class_weights: torch.Tensor | None = None  # (num_classes,) train.class_weights=auto

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        # float32 even under autocast
        return F.cross_entropy(outputs.float(), targets, weight=self.class_weights)

    def metric_sums(self, outputs: torch.Tensor, targets: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per-batch sums, kept on the device; `summarise` turns the totals into metrics."""
        return {"correct": (outputs.argmax(dim=1) == targets).sum()}

    def summarise(self, sums: dict[str, float], num_samples: int) -> dict[str, float]:
        return {"accuracy": sums["correct"] / max(num_samples, 1)}

    def is_better(self, value: float, best: float | None) -> bool:
        return best is None or value > best

    def for_training(
        self,
        config: Config,
        targets: Callable[[], torch.Tensor],
        saved: torch.Tensor | None,
        device: torch.device,
    ) -> tuple[Classification, torch.Tensor | None]:
        """This task with the loss weights of train.class_weights=auto (a resumed run's
        `saved` weights, else inverse class frequency in the training `targets`), and the
        per-sample weights of data.balanced_sampler (None: plain shuffling)."""
        weights, per_sample = None, None
        if config.train.class_weights == "auto" or config.data.balanced_sampler:
            labels = targets()
            counts = torch.bincount(labels, minlength=int(labels.max()) + 1).float()  # (K,)
            if config.train.class_weights == "auto":
                # n / (K * count): 1 for balanced classes; a class with no sample gets 0
                balanced = len(labels) / (len(counts) * counts.clamp(min=1)) * (counts > 0)
                weights = (balanced if saved is None else saved).to(device)
            if config.data.balanced_sampler:
                per_sample = 1.0 / counts[labels]  # (N,) each class drawn equally often
        return dataclasses.replace(self, class_weights=weights), per_sample


Task = Classification  # the type of this project's task objects
TASKS = {task.name: task for task in [Classification("sequence-classification")]}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ConfigError(f"unknown task {name!r}; this project knows {', '.join(TASKS)}")
    return TASKS[name]
