"""synthetic: synthetic sequence-classification data with a learnable signal.

ptgen dataset kind "synthetic".

Sizes come from the [data] config (num_samples, num_classes, image_size, max_length,
vocab_size, num_features). This file is yours: `ptgen update` never touches it.
"""

from __future__ import annotations

from typing import Any

from ..config import DataConfig
from . import DataBundle
from ._synthetic import make_bundle


def build(cfg: DataConfig, seed: int, state: dict[str, Any] | None = None) -> DataBundle:
    return make_bundle("sequence-classification", cfg, seed)
