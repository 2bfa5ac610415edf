"""What is learned: the loss and the metrics of each task.

Metrics accumulate as device tensors (sums and counts) and are read once per log
interval or evaluation, so the training loop never waits on the device every step.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def loss_fn(task: str, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    if task == "tabular-regression":
        return F.mse_loss(outputs.float(), targets.float())  # outputs: (B, num_outputs)
    return F.cross_entropy(outputs.float(), targets)  # outputs: (B, num_classes)


def sum_keys(task: str) -> tuple[str, ...]:
    """The names `metric_sums` returns, known up front so every rank reduces the same."""
    return ("abs_error",) if task == "tabular-regression" else ("correct",)


def metric_sums(task: str, outputs: torch.Tensor, targets: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-batch sums; `summarise` turns accumulated sums into means."""
    if task == "tabular-regression":
        return {"abs_error": (outputs.float() - targets.float()).abs().mean(dim=1).sum()}
    return {"correct": (outputs.argmax(dim=1) == targets).sum()}


def summarise(task: str, sums: dict[str, float], num_samples: int) -> dict[str, float]:
    """Means over samples, named as reported by `evaluate --json`."""
    n = max(num_samples, 1)
    if task == "tabular-regression":
        return {"mae": sums.get("abs_error", 0.0) / n}
    return {"accuracy": sums.get("correct", 0.0) / n}


def best_metric(task: str) -> tuple[str, str]:
    """The validation metric that decides best.pt, and whether higher is better."""
    if task == "tabular-regression":
        return "mae", "min"
    return "accuracy", "max"
