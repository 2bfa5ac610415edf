"""What `predict` and `export` read: one raw input (`Raw`), and how a dataset kind turns raw
inputs into model inputs (`RawInputs`). The readers of each kind of input are in `_inputs`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch


class Raw(NamedTuple):
    """One raw input, or why it cannot be read (then `value` is None)."""

    source: str  # the file (or argument) it came from
    row: int | None  # its row in that file, counted from 1; None for a whole file
    value: Any  # what `RawInputs.prepare` takes
    error: str | None = None


@dataclass
class RawInputs:
    """How a dataset kind turns raw inputs into model inputs (the protocol: `_inputs`)."""

    read: Callable[[list[str]], Iterator[Raw]]  # predict's INPUT arguments -> raw inputs, lazily
    # one raw value -> one sample (no targets), checked and converted as the dataset's
    # items are; raises ValueError or OSError with the reason when it cannot be used
    prepare: Callable[[Any], dict[str, Any]]
    preprocessing: dict[str, Any]  # the steps, as JSON, for an export's sidecar
    # samples -> the model's inputs (None: stack them); it may finish preparing a batch at
    # a time what is cheaper so (the csv kind standardises whole batches)
    collate_fn: Callable[[list[dict[str, Any]]], dict[str, torch.Tensor]] | None = None
