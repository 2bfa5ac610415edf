"""synthetic: synthetic image-classification data (ptgen dataset kind "synthetic").

Sizes come from the [data] options below and in `_synthetic.SyntheticOptions`. This file
is yours: `ptgen update` never touches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import DataBundle
from ._synthetic import SyntheticOptions, make_splits


@dataclass
class Options(SyntheticOptions):
    """[data] options of this dataset: set them with --set data.KEY=VALUE."""


def build(cfg: Options, seed: int, state: dict[str, Any] | None = None) -> DataBundle:
    return DataBundle(*make_splits(cfg, seed))
