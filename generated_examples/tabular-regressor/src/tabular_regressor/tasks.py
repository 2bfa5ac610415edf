"""What this project learns: tabular-regression.

The task is one object (`get_task`): its loss, the metric sums it keeps on the device in
evaluation and the numbers they become, and the metric that picks best.pt
(`train.monitor`). `for_data(spec, state)` tells it about the data:
the target's mean and std (`state["target_mean"]`, `state["target_std"]`, saved by a
dataset that standardises its targets), so metrics and predictions are in target units.
`DataSpec`: what a model needs to know about the data, filled in by the dataset.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from .config import ConfigError


@dataclass(frozen=True)
class DataSpec:
    num_outputs: int  # number of target values per sample
    num_features: int = 8  # values per table row


@dataclass(frozen=True)
class Regression:
    """Predicted values (B, num_outputs) against targets (B, num_outputs): mean squared
    error as the loss (in the model's units); MAE, RMSE and R^2 in the target's own units.

    A dataset that standardises its targets saves their mean and std in its state; the
    model then predicts standardised values, and `to_units` turns them back. The sums are
    kept in the model's units (small numbers: no float32 cancellation) and scaled when
    summarised: MAE and RMSE scale with the std, R^2 does not change."""

    name: str
    monitor: str = "mae"  # the validation metric that picks best.pt (train.monitor)
    num_outputs: int = 1  # set by `for_data`
    target_mean: tuple[float, ...] = (0.0,)  # set by `for_data`: per output
    target_std: tuple[float, ...] = (1.0,)  # set by `for_data`: per output
    metrics: tuple[str, ...] = ("mae", "rmse", "r2")  # reported besides the loss

    def for_data(self, spec: DataSpec, state: dict[str, Any]) -> Regression:
        """This task for `spec.num_outputs` targets, standardised with `state["target_mean"]`
        and `state["target_std"]` (a number, or one per output; absent: not standardised)."""

        def per_output(key: str, default: float) -> tuple[float, ...]:
            value = torch.as_tensor(state.get(key, default), dtype=torch.float64)
            return tuple(value.expand(spec.num_outputs).tolist())

        return dataclasses.replace(
            self,
            num_outputs=spec.num_outputs,
            target_mean=per_output("target_mean", 0.0),
            target_std=per_output("target_std", 1.0),
        )

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(outputs.float(), targets.float())  # float32 even under autocast

    def to_units(self, outputs: torch.Tensor) -> torch.Tensor:
        """Model outputs (B, num_outputs) in the target's own units."""
        mean = torch.tensor(self.target_mean, device=outputs.device)  # (num_outputs,)
        std = torch.tensor(self.target_std, device=outputs.device)  # (num_outputs,)
        return outputs.float() * std + mean  # (B, num_outputs)

    def zero_sums(self, device: torch.device) -> dict[str, torch.Tensor]:
        """What `metric_sums` accumulates, all zero (also for a rank that sees no batch)."""
        keys = ("abs_error", "squared_error", "target_sum", "target_squares")
        return {key: torch.zeros(self.num_outputs, device=device) for key in keys}

    def metric_sums(self, outputs: torch.Tensor, targets: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per-batch sums per output (num_outputs,), kept on the device."""
        error = outputs.float() - targets.float()  # (B, num_outputs)
        return {
            "abs_error": error.abs().sum(dim=0),
            "squared_error": error.square().sum(dim=0),
            "target_sum": targets.float().sum(dim=0),
            "target_squares": targets.float().square().sum(dim=0),
        }

    def summarise(self, sums: dict[str, torch.Tensor], num_samples: int) -> dict[str, float]:
        """MAE, RMSE and R^2 in target units, averaged over the outputs; R^2 is NaN (null in
        JSON) when the targets do not vary."""
        n = max(num_samples, 1)
        std = torch.tensor(self.target_std, dtype=torch.float64).abs()  # (num_outputs,)
        squared = sums["squared_error"].double()  # (num_outputs,)
        spread = sums["target_squares"].double() - sums["target_sum"].double().square() / n
        r2 = 1 - squared / spread.where(spread > 1e-12, torch.tensor(float("nan")))
        return {
            "mae": float((sums["abs_error"].double() * std).mean()) / n,
            "rmse": float(((squared / n).sqrt() * std).mean()),
            "r2": float(r2.mean()),
        }

    def details(self, sums: dict[str, torch.Tensor]) -> dict[str, Any]:
        return {}  # everything is in `summarise`

    def is_better(self, value: float, best: float | None) -> bool:
        """Whether `value` of train.monitor beats `best`: r2 rises, the loss and errors fall."""
        return best is None or (value < best if self.monitor != "r2" else value > best)


Task = Regression  # the type of this project's task objects
TASKS = {task.name: task for task in [Regression("tabular-regression")]}


def get_task(name: str, monitor: str = "") -> Task:
    """The task called `name`; `monitor` (train.monitor) replaces its default metric."""
    if name not in TASKS:
        raise ConfigError(f"unknown task {name!r}; this project knows {', '.join(TASKS)}")
    return dataclasses.replace(TASKS[name], monitor=monitor) if monitor else TASKS[name]
