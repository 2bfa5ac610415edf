"""What this project learns: segmentation.

The task is one object (`get_task`): its loss, the metric sums it keeps on the device in
evaluation and the numbers they become, and the metric that picks best.pt
(`train.monitor`). `for_data(spec, state)` tells it about the data:
the number of classes, their names (`state["classes"]`, saved by the dataset) and the mask
value of unlabelled pixels (`spec.ignore_index`), which neither the loss nor the metrics count.
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
    in_channels: int = 3  # image channels
    image_size: int = 32  # images are image_size x image_size
    ignore_index: int = 255  # mask value of unlabelled pixels: no loss, not scored


@dataclass(frozen=True)
class Segmentation:
    """Per-pixel class scores (B, K, H, W) against masks of class ids (B, H, W): per-pixel
    cross-entropy, pixels marked `ignore_index` left out; from the pixel confusion matrix,
    pixel accuracy, each class's intersection over union (IoU) and their mean (mIoU, over
    the classes that occur as targets or predictions)."""

    name: str
    monitor: str = "miou"  # the validation metric that picks best.pt (train.monitor)
    num_classes: int = 0  # set by `for_data`
    class_names: tuple[str, ...] = ()  # set by `for_data`: the name of each class index
    ignore_index: int = 255  # set by `for_data`: the mask value of unlabelled pixels
    metrics: tuple[str, ...] = ("pixel_accuracy", "miou")  # reported besides the loss

    def for_data(self, spec: DataSpec, state: dict[str, Any]) -> Segmentation:
        """This task for masks of `spec.num_outputs` classes, named by `state["classes"]`
        (numbered when the dataset saves no names, e.g. synthetic data)."""
        names = tuple(state.get("classes") or (str(i) for i in range(spec.num_outputs)))
        return dataclasses.replace(
            self, num_classes=spec.num_outputs, class_names=names, ignore_index=spec.ignore_index
        )

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy over the labelled pixels (0 for a batch without any)."""
        total = F.cross_entropy(  # float32 even under autocast
            outputs.float(), targets, ignore_index=self.ignore_index, reduction="sum"
        )
        return total / (targets != self.ignore_index).sum().clamp(min=1)

    def zero_sums(self, device: torch.device) -> dict[str, torch.Tensor]:
        """`metric_sums`'s sums at zero (also for a rank that sees no batch)."""
        k = self.num_classes
        return {"confusion": torch.zeros(k, k, dtype=torch.long, device=device)}  # (K, K)

    def metric_sums(self, outputs: torch.Tensor, targets: torch.Tensor) -> dict[str, torch.Tensor]:
        """The pixel confusion matrix of a batch (rows: true class, columns: predicted), on
        the device; unlabelled pixels are left out."""
        k = self.num_classes
        predicted = outputs.argmax(dim=1)  # (B, H, W)
        labelled = targets != self.ignore_index  # (B, H, W)
        cells = targets[labelled] * k + predicted[labelled]  # (P,) labelled pixels
        return {"confusion": torch.bincount(cells, minlength=k * k).view(k, k)}  # (K, K)

    def summarise(self, sums: dict[str, torch.Tensor], num_samples: int) -> dict[str, float]:
        """Pixel accuracy and mean IoU from the totals (CPU tensors) of `metric_sums`."""
        confusion = sums["confusion"].double()  # (K, K)
        union = confusion.sum(dim=0) + confusion.sum(dim=1) - confusion.diagonal()  # (K,)
        seen = union > 0  # (K,) true or predicted somewhere
        return {
            "pixel_accuracy": float(confusion.trace() / confusion.sum().clamp(min=1)),
            "miou": float(iou(confusion)[seen].mean()) if bool(seen.any()) else 0.0,
        }

    def details(self, sums: dict[str, torch.Tensor]) -> dict[str, Any]:
        """Each class's IoU and labelled pixel count, and the pixel confusion matrix."""
        confusion = sums["confusion"]
        ious = iou(confusion.double())  # (K,)
        per_name = {
            name: {"iou": float(ious[i]), "pixels": int(confusion[i].sum())}
            for i, name in enumerate(self.class_names)
        }
        return {"per_class": per_name, "confusion_matrix": confusion.tolist()}

    def is_better(self, value: float, best: float | None) -> bool:
        """Whether `value` of train.monitor beats `best`: the loss falls, the other metrics rise."""
        return best is None or (value < best if self.monitor == "loss" else value > best)


def iou(confusion: torch.Tensor) -> torch.Tensor:
    """Intersection over union of each class (K,) from a confusion matrix (K, K) whose rows
    are true classes; 0 for a class neither present nor predicted."""
    hits = confusion.diagonal()  # (K,)
    union = confusion.sum(dim=0) + confusion.sum(dim=1) - hits  # (K,)
    return hits / union.clamp(min=1)  # (K,)


Task = Segmentation  # the type of this project's task objects
TASKS = {task.name: task for task in [Segmentation("segmentation")]}


def get_task(name: str, monitor: str = "") -> Task:
    """The task called `name`; `monitor` (train.monitor) replaces its default metric."""
    if name not in TASKS:
        raise ConfigError(f"unknown task {name!r}; this project knows {', '.join(TASKS)}")
    return dataclasses.replace(TASKS[name], monitor=monitor) if monitor else TASKS[name]
