"""What this project learns: language-modeling.

The task is one object (`get_task`): its loss, the metric sums it keeps on the device in
evaluation and the numbers they become, and the metric that picks best.pt
(`train.monitor`). `for_data(spec, state)` tells it about the data:
the vocabulary size (the tokeniser itself is in `state`, used by `generate`).
`DataSpec`: what a model needs to know about the data, filled in by the dataset.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from .config import ConfigError


@dataclass(frozen=True)
class DataSpec:
    num_outputs: int  # vocabulary size: the model scores every possible next token
    block_size: int = 64  # the longest context, in tokens, that the model sees


@dataclass(frozen=True)
class LanguageModeling:
    """Next-token scores (B, T, vocab) against the next tokens (B, T): cross-entropy, in
    nats per token, as the loss; perplexity (exp of it) besides. The metric sums are the
    summed negative log-likelihood and the token count, so both metrics are exact per
    token over the whole split, whatever its batches."""

    name: str
    monitor: str = "loss"  # the validation metric that picks best.pt (train.monitor)
    vocab_size: int = 0  # set by `for_data`
    metrics: tuple[str, ...] = ("nats_per_token", "perplexity")  # reported besides the loss

    def for_data(self, spec: DataSpec, state: dict[str, Any]) -> LanguageModeling:
        """This task for a vocabulary of `spec.num_outputs` tokens."""
        return dataclasses.replace(self, vocab_size=spec.num_outputs)

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        # (B * T, vocab) against (B * T,), float32 even under autocast
        return F.cross_entropy(outputs.float().flatten(0, 1), targets.flatten())

    def zero_sums(self, device: torch.device) -> dict[str, torch.Tensor]:
        """What `metric_sums` accumulates, all zero (also for a rank that sees no batch)."""
        return {
            "nll": torch.zeros((), device=device),
            "tokens": torch.zeros((), dtype=torch.long, device=device),
        }

    def metric_sums(self, outputs: torch.Tensor, targets: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per-batch sums, kept on the device: the summed nats and the number of tokens."""
        flat = outputs.float().flatten(0, 1)  # (B * T, vocab)
        nll = F.cross_entropy(flat, targets.flatten(), reduction="sum")
        return {"nll": nll, "tokens": torch.tensor(targets.numel(), device=targets.device)}

    def summarise(self, sums: dict[str, torch.Tensor], num_samples: int) -> dict[str, float]:
        """Nats per token and perplexity from the totals (CPU tensors) of `metric_sums`."""
        nats = float(sums["nll"]) / max(int(sums["tokens"]), 1)
        return {"nats_per_token": nats, "perplexity": math.exp(min(nats, 700.0))}

    def details(self, sums: dict[str, torch.Tensor]) -> dict[str, Any]:
        return {}  # everything is in `summarise`

    def is_better(self, value: float, best: float | None) -> bool:
        """Whether `value` of train.monitor beats `best`: loss, nats per token and perplexity
        all fall as the model improves."""
        return best is None or value < best


Task = LanguageModeling  # the type of this project's task objects
TASKS = {task.name: task for task in [LanguageModeling("language-modeling")]}


def get_task(name: str, monitor: str = "") -> Task:
    """The task called `name`; `monitor` (train.monitor) replaces its default metric."""
    if name not in TASKS:
        raise ConfigError(f"unknown task {name!r}; this project knows {', '.join(TASKS)}")
    return dataclasses.replace(TASKS[name], monitor=monitor) if monitor else TASKS[name]
