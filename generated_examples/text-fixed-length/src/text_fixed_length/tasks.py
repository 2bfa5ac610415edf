"""What this project learns: sequence-classification.

The task is one object (`get_task`): its loss, the metric sums it keeps on the device in
evaluation and the numbers they become, and the metric that picks best.pt
(`train.monitor`). `for_data(spec, state)` tells it about the data:
the number of classes and their names (`state["classes"]`, saved by the dataset).
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
    num_outputs: int  # number of classes
    vocab_size: int = 1000  # token ids are 0..vocab_size-1; 0 is padding


@dataclass(frozen=True)
class Classification:
    """Class scores (B, K) against class indices (B,): cross-entropy; accuracy, top-5 (from 5
    classes), and from the confusion matrix per-class precision, recall, F1 and macro-F1."""

    name: str
    monitor: str = "accuracy"  # the validation metric that picks best.pt (train.monitor)
    num_classes: int = 0  # set by `for_data`
    class_names: tuple[str, ...] = ()  # set by `for_data`: the name of each class index

    def for_data(self, spec: DataSpec, state: dict[str, Any]) -> Classification:
        """This task for `spec.num_outputs` classes named by `state["classes"]` (or numbers)."""
        names = tuple(state.get("classes") or (str(i) for i in range(spec.num_outputs)))
        task = dataclasses.replace(self, num_classes=spec.num_outputs, class_names=names)
        if self.monitor not in ("loss", *task.metrics):
            raise ConfigError(
                f"train.monitor={self.monitor} is not reported for {spec.num_outputs} classes; "
                f"choose one of loss, {', '.join(task.metrics)}: --set train.monitor=loss"
            )
        return task

    @property
    def metrics(self) -> tuple[str, ...]:
        """The scalar metrics reported besides the loss (metrics.csv columns)."""
        return ("accuracy", "top5_accuracy", "macro_f1") if self.top5 else ("accuracy", "macro_f1")

    @property
    def top5(self) -> bool:
        return self.num_classes >= 5

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        # float32 even under autocast
        return F.cross_entropy(outputs.float(), targets)

    def zero_sums(self, device: torch.device) -> dict[str, torch.Tensor]:
        """`metric_sums`'s sums at zero (also for a rank that sees no batch)."""
        k = self.num_classes
        sums = {"confusion": torch.zeros(k, k, dtype=torch.long, device=device)}  # (K, K)
        if self.top5:
            sums["top5_correct"] = torch.zeros((), dtype=torch.long, device=device)
        return sums

    def metric_sums(self, outputs: torch.Tensor, targets: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per-batch sums on the device: the confusion matrix (true rows) and top-5 hits."""
        k = self.num_classes
        predicted = outputs.argmax(dim=1)  # (B,)
        cells = torch.bincount(targets * k + predicted, minlength=k * k)  # (K * K,)
        sums = {"confusion": cells.view(k, k)}  # (K, K)
        if self.top5:
            top5 = outputs.topk(5, dim=1).indices  # (B, 5)
            sums["top5_correct"] = (top5 == targets[:, None]).any(dim=1).sum()
        return sums

    def summarise(self, sums: dict[str, torch.Tensor], num_samples: int) -> dict[str, float]:
        """The scalar metrics from the totals (CPU tensors) of `metric_sums`."""
        confusion, n = sums["confusion"].double(), max(num_samples, 1)
        result = {"accuracy": float(confusion.trace()) / n}
        if self.top5:
            result["top5_accuracy"] = float(sums["top5_correct"]) / n
        f1 = per_class(confusion)[2]  # (K,)
        seen = (confusion.sum(dim=0) + confusion.sum(dim=1)) > 0  # (K,) true or predicted
        result["macro_f1"] = float(f1[seen].mean()) if bool(seen.any()) else 0.0
        return result

    def details(self, sums: dict[str, torch.Tensor]) -> dict[str, Any]:
        """Per class precision, recall, F1 and support, and the confusion matrix."""
        confusion = sums["confusion"]
        precision, recall, f1 = per_class(confusion.double())
        per_name = {
            name: {
                "precision": float(precision[i]),
                "recall": float(recall[i]),
                "f1": float(f1[i]),
                "support": int(confusion[i].sum()),
            }
            for i, name in enumerate(self.class_names)
        }
        return {"per_class": per_name, "confusion_matrix": confusion.tolist()}

    def is_better(self, value: float, best: float | None) -> bool:
        """Whether `value` of train.monitor beats `best`: the loss falls, the other metrics rise."""
        return best is None or (value < best if self.monitor == "loss" else value > best)


def per_class(confusion: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Precision, recall and F1 (K,) from a confusion matrix (K, K) of true-class rows."""
    hits = confusion.diagonal()  # (K,)
    precision = hits / confusion.sum(dim=0).clamp(min=1)  # (K,) over predictions of the class
    recall = hits / confusion.sum(dim=1).clamp(min=1)  # (K,) over samples of the class
    f1 = 2 * precision * recall / (precision + recall).clamp(min=1e-12)  # (K,)
    return precision, recall, f1


Task = Classification  # the type of this project's task objects
TASKS = {task.name: task for task in [Classification("sequence-classification")]}


def get_task(name: str, monitor: str = "") -> Task:
    """The task called `name`; `monitor` (train.monitor) replaces its default metric."""
    if name not in TASKS:
        raise ConfigError(f"unknown task {name!r}; this project knows {', '.join(TASKS)}")
    return dataclasses.replace(TASKS[name], monitor=monitor) if monitor else TASKS[name]
