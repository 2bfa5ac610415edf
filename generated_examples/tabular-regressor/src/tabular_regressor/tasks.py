"""What this project learns: tabular-regression.

The task is one object: its loss, the metric sums it accumulates on the device during
evaluation and the numbers they become, the validation metric that picks best.pt (and
whether higher is better), and the metric columns of metrics.csv. `get_task(name)` looks
it up; an unknown name is an error. `DataSpec` is what a model needs to know about the
data, filled in by the dataset.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .config import Config, ConfigError


@dataclass(frozen=True)
class DataSpec:
    num_outputs: int  # number of target values per sample
    num_features: int = 8  # values per table row


@dataclass(frozen=True)
class Regression:
    """Predicted values (B, num_outputs) against targets (B, num_outputs): mean squared
    error as the loss, mean absolute error as the metric."""

    name: str
    monitor: str = "mae"  # the validation metric that picks best.pt
    higher_is_better: bool = False
    metrics: tuple[str, ...] = ("mae",)  # reported besides the loss
    sums: tuple[str, ...] = ("abs_error",)  # what `metric_sums` accumulates

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(outputs.float(), targets.float())  # float32 even under autocast

    def metric_sums(self, outputs: torch.Tensor, targets: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per-batch sums, kept on the device; `summarise` turns the totals into metrics."""
        return {"abs_error": (outputs.float() - targets.float()).abs().mean(dim=1).sum()}

    def summarise(self, sums: dict[str, float], num_samples: int) -> dict[str, float]:
        return {"mae": sums["abs_error"] / max(num_samples, 1)}

    def is_better(self, value: float, best: float | None) -> bool:
        return best is None or value < best

    def for_training(
        self,
        config: Config,
        targets: Callable[[], torch.Tensor],
        saved: torch.Tensor | None,
        device: torch.device,
    ) -> tuple[Regression, None]:
        """No classes, so nothing to balance: this task, and plain shuffling."""
        return self, None


Task = Regression  # the type of this project's task objects
TASKS = {task.name: task for task in [Regression("tabular-regression")]}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ConfigError(f"unknown task {name!r}; this project knows {', '.join(TASKS)}")
    return TASKS[name]
