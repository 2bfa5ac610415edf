"""Synthetic table rows with a learnable class signal, for smoke runs and for datasets
without a root.

Everything is generated up front from the seed, so every run (and every DataLoader
worker) sees exactly the same samples.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import Dataset

from ..config import DataConfig, option
from ..tasks import DataSpec
from . import TensorDictDataset


@dataclass
class SyntheticOptions(DataConfig):
    """[data] options of synthetic rows (also the fallback of datasets without a root)."""

    num_features: int = option(8, "synthetic data: input features per row", low=1)
    num_classes: int = option(3, "synthetic data: number of classes", low=2)
    num_samples: int = option(512, "synthetic data: training rows (validation: a quarter)", low=1)


def make_splits(cfg: SyntheticOptions, seed: int) -> tuple[Dataset, Dataset, DataSpec]:
    """Train and validation splits: each class is a cloud of rows around its own centre."""
    gen = torch.Generator().manual_seed(seed)
    centres = 1.5 * torch.randn(cfg.num_classes, cfg.num_features, generator=gen)  # (K, F)

    def split(n: int) -> TensorDictDataset:
        labels = torch.randint(0, cfg.num_classes, (n,), generator=gen)  # (N,)
        x = centres[labels] + torch.randn(n, cfg.num_features, generator=gen)  # (N, F)
        return TensorDictDataset(x, labels)

    train, val = split(cfg.num_samples), split(max(cfg.num_samples // 4, 1))
    return train, val, DataSpec(num_outputs=cfg.num_classes, num_features=cfg.num_features)


def example_batch(spec: DataSpec, batch_size: int) -> dict[str, torch.Tensor]:
    """A random batch of what models of this task take (for tests and export)."""
    return {"inputs": torch.randn(batch_size, spec.num_features)}  # (B, F)
