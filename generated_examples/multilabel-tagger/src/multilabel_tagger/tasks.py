"""What this project learns: multilabel-classification.

The task is one object (`get_task`): its loss, the metric sums it keeps on the device in
evaluation and the numbers they become, and the metric that picks best.pt
(`train.monitor`). `for_data(spec, state)` tells it about the data:
the number of labels and their names (`state["classes"]`, saved by the dataset).
`DataSpec`: what a model needs to know about the data, filled in by the dataset.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from .config import Config, ConfigError


@dataclass(frozen=True)
class DataSpec:
    num_outputs: int  # number of labels (a sample has any subset of them)
    in_channels: int = 3  # image channels
    image_size: int = 32  # images are image_size x image_size


@dataclass(frozen=True)
class Multilabel:
    """Label scores (B, L) against multi-hot targets (B, L): binary cross-entropy (with
    train.pos_weight=auto, positives weighted by negatives / positives of each label).

    A label is predicted when its probability reaches its own threshold. Evaluation keeps,
    per label, histograms of the probabilities of its positive and negative samples
    (BINS bins: sums, so they add up across batches and ranks); from them come, for every
    bin edge, the counts of true and false positives. Without saved `thresholds` (during
    training) each label's threshold is the edge that maximises its F1 on the split
    evaluated (the validation split); checkpoints save them, and `evaluate` and `predict`
    use the saved ones. Metrics: micro-F1 (over all label decisions), macro-F1 (the mean F1
    of the labels that occur as targets or predictions), mAP (the mean over labels with a
    positive of the average precision, from the histograms: exact up to the bin width)."""

    name: str
    monitor: str = "micro_f1"  # the validation metric that picks best.pt (train.monitor)
    num_classes: int = 0  # set by `for_data`: the number of labels
    class_names: tuple[str, ...] = ()  # set by `for_data`: the name of each label index
    class_weights: torch.Tensor | None = None  # (L,) BCE pos_weight, set by `for_training`
    thresholds: tuple[float, ...] = ()  # one per label, from a checkpoint (`with_thresholds`)
    metrics: tuple[str, ...] = ("micro_f1", "macro_f1", "map")  # reported besides the loss

    def for_data(self, spec: DataSpec, state: dict[str, Any]) -> Multilabel:
        """This task for data of `spec.num_outputs` labels, named by `state["classes"]`."""
        names = tuple(state.get("classes") or (str(i) for i in range(spec.num_outputs)))
        return dataclasses.replace(self, num_classes=spec.num_outputs, class_names=names)

    def with_thresholds(self, thresholds: list[float] | None) -> Multilabel:
        """This task deciding with a checkpoint's thresholds (None: a checkpoint saved
        before its first evaluation; then they are tuned on the split evaluated)."""
        if thresholds is None:
            return self
        if len(thresholds) != self.num_classes:
            raise ConfigError(f"{len(thresholds)} thresholds for {self.num_classes} labels")
        return dataclasses.replace(self, thresholds=tuple(float(t) for t in thresholds))

    def for_training(
        self,
        config: Config,
        targets: Callable[[], torch.Tensor],
        saved: torch.Tensor | None,
        device: torch.device,
    ) -> Multilabel:
        """This task with the BCE pos_weight of train.pos_weight=auto (a resumed run's
        `saved` weights, else negatives / positives of each label in the training
        `targets`, 1 for a label without positives)."""
        if config.train.pos_weight != "auto":
            return self
        if saved is None:
            labels = targets().float()  # (N, L)
            positives = labels.sum(dim=0)  # (L,)
            saved = torch.where(positives > 0, (len(labels) - positives) / positives, 1.0)
        return dataclasses.replace(self, class_weights=saved.to(device))

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        # float32 even under autocast
        return F.binary_cross_entropy_with_logits(
            outputs.float(), targets.float(), pos_weight=self.class_weights
        )

    def bins(self, probabilities: torch.Tensor) -> torch.Tensor:
        """The histogram bin of each probability: 0..BINS-1 (long, same shape)."""
        return (probabilities.float() * BINS).long().clamp(0, BINS - 1)

    def decide(self, outputs: torch.Tensor) -> torch.Tensor:
        """(B, L) bool: the labels predicted with the saved thresholds (0.5 without any),
        by the same bins that evaluation counts with."""
        thresholds = self.thresholds or (0.5,) * self.num_classes
        edges = torch.tensor([round(t * BINS) for t in thresholds], device=outputs.device)
        return self.bins(outputs.float().sigmoid()) >= edges  # (B, L)

    def zero_sums(self, device: torch.device) -> dict[str, torch.Tensor]:
        """What `metric_sums` accumulates, all zero (also for a rank that sees no batch)."""
        shape = (self.num_classes, BINS)
        return {key: torch.zeros(shape, dtype=torch.long, device=device) for key in HISTOGRAMS}

    def metric_sums(self, outputs: torch.Tensor, targets: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per label, the histograms (L, BINS) of the probabilities of positive and of
        negative samples, kept on the device."""
        k = self.num_classes
        cells = self.bins(outputs.float().sigmoid())  # (B, L)
        cells = cells + torch.arange(k, device=cells.device) * BINS  # (B, L) flat cell
        positive = targets > 0.5  # (B, L)
        return {
            "positive_bins": torch.bincount(cells[positive], minlength=k * BINS).view(k, BINS),
            "negative_bins": torch.bincount(cells[~positive], minlength=k * BINS).view(k, BINS),
        }

    def counts(self, sums: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """Per label and bin edge (L, BINS): true positives and false positives when the
        threshold is that edge, and the positives (L,)."""
        tp = sums["positive_bins"].double().flip(1).cumsum(1).flip(1)  # (L, BINS) p >= edge
        fp = sums["negative_bins"].double().flip(1).cumsum(1).flip(1)  # (L, BINS)
        return tp, fp, sums["positive_bins"].double().sum(dim=1)  # (L,)

    def edges(self, sums: dict[str, torch.Tensor]) -> torch.Tensor:
        """(L,) the threshold edge of each label: the saved one, or the middle of the edges
        that maximise its F1 here (0.5 for a label without positives)."""
        if self.thresholds:
            return torch.tensor([round(t * BINS) for t in self.thresholds])
        tp, fp, positives = self.counts(sums)
        f1 = 2 * tp / (tp + fp + positives[:, None]).clamp(min=1)  # (L, BINS)
        chosen = []
        for label in range(self.num_classes):
            best = (f1[label] == f1[label].max()).nonzero().flatten()
            middle = int(best[len(best) // 2]) if positives[label] > 0 else BINS // 2
            chosen.append(middle)
        return torch.tensor(chosen)

    def per_label(self, sums: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Per label (L,): TP, FP, FN at its threshold edge, and its average precision."""
        tp, fp, positives = self.counts(sums)
        at = self.edges(sums)[:, None]  # (L, 1)
        hits, false = tp.gather(1, at).flatten(), fp.gather(1, at).flatten()  # (L,)
        precision = tp / (tp + fp).clamp(min=1)  # (L, BINS) at each edge
        recall = tp / positives[:, None].clamp(min=1)  # (L, BINS), falls with the edge
        steps = recall - torch.cat([recall[:, 1:], torch.zeros_like(recall[:, :1])], dim=1)
        return {
            "tp": hits,
            "fp": false,
            "fn": positives - hits,
            "ap": (precision * steps).sum(dim=1),  # (L,)
            "positives": positives,
            "edge": at.flatten().double(),
        }

    def summarise(self, sums: dict[str, torch.Tensor], num_samples: int) -> dict[str, Any]:
        """micro-F1, macro-F1 and mAP from the totals (CPU tensors) of `metric_sums`, and
        the thresholds they were decided with (`thresholds`: a list, one per label)."""
        m = self.per_label(sums)
        tp, fp, fn = m["tp"].sum(), m["fp"].sum(), m["fn"].sum()
        f1 = 2 * m["tp"] / (2 * m["tp"] + m["fp"] + m["fn"]).clamp(min=1)  # (L,)
        seen = (m["tp"] + m["fp"] + m["fn"]) > 0  # (L,) a target or a prediction
        has_positives = m["positives"] > 0  # (L,)
        return {
            "micro_f1": float(2 * tp / (2 * tp + fp + fn).clamp(min=1)),
            "macro_f1": float(f1[seen].mean()) if bool(seen.any()) else 0.0,
            "map": float(m["ap"][has_positives].mean()) if bool(has_positives.any()) else 0.0,
            "thresholds": (m["edge"] / BINS).tolist(),
        }

    def details(self, sums: dict[str, torch.Tensor]) -> dict[str, Any]:
        """Per label precision, recall, F1, average precision, support and threshold."""
        m = self.per_label(sums)
        precision = m["tp"] / (m["tp"] + m["fp"]).clamp(min=1)  # (L,)
        recall = m["tp"] / m["positives"].clamp(min=1)  # (L,)
        f1 = 2 * m["tp"] / (2 * m["tp"] + m["fp"] + m["fn"]).clamp(min=1)  # (L,)
        per_name = {
            name: {
                "precision": float(precision[i]),
                "recall": float(recall[i]),
                "f1": float(f1[i]),
                "average_precision": float(m["ap"][i]),
                "support": int(m["positives"][i]),
                "threshold": float(m["edge"][i]) / BINS,
            }
            for i, name in enumerate(self.class_names)
        }
        return {"per_class": per_name}

    def is_better(self, value: float, best: float | None) -> bool:
        """Whether `value` of train.monitor beats `best`: the loss falls, the other metrics rise."""
        return best is None or (value < best if self.monitor == "loss" else value > best)


BINS = 1000  # probability histogram bins per label: thresholds are multiples of 1 / BINS
HISTOGRAMS = ("positive_bins", "negative_bins")
Task = Multilabel  # the type of this project's task objects
TASKS = {task.name: task for task in [Multilabel("multilabel-classification")]}


def get_task(name: str, monitor: str = "") -> Task:
    """The task called `name`; `monitor` (train.monitor) replaces its default metric."""
    if name not in TASKS:
        raise ConfigError(f"unknown task {name!r}; this project knows {', '.join(TASKS)}")
    return dataclasses.replace(TASKS[name], monitor=monitor) if monitor else TASKS[name]
