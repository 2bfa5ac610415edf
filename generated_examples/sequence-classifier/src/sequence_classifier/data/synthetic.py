"""synthetic: synthetic sequence-classification data (ptgen dataset kind "synthetic").

Variable length: each batch is padded to its own longest sequence (`pad_collate`), with
lengths and a padding mask; `data.bucket_by_length` batches similar lengths together.

Sizes come from the [data] options below and in `_synthetic.SyntheticOptions`. This file
is yours: `ptgen update` never touches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import option
from . import DataBundle
from ._sequences import variable_length
from ._synthetic import SyntheticOptions, make_splits


@dataclass
class Options(SyntheticOptions):
    """[data] options of this dataset: set them with --set data.KEY=VALUE."""

    bucket_by_length: bool = option(False, "batch similar lengths together (less padding)")


def build(cfg: Options, seed: int, state: dict[str, Any] | None = None) -> DataBundle:
    return variable_length(*make_splits(cfg, seed), bucket=cfg.bucket_by_length)
