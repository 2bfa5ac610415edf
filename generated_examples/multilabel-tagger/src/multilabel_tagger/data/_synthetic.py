"""Synthetic multi-label images, for smoke runs and for datasets without a root.

Each label is a grating of its own orientation and frequency; an image holds the gratings
of its labels (each present with probability 0.3, independently; some images hold none),
at random phases, under pixel noise. Everything is generated up front from the seed, so
every run (and every DataLoader worker) sees exactly the same samples.
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
    """[data] options of synthetic images (also the fallback of datasets without a root)."""

    num_classes: int = option(6, "synthetic data: number of labels", low=2)
    num_samples: int = option(
        512, "synthetic data: training samples (validation: a quarter)", low=1
    )
    image_size: int = option(32, "images are image_size x image_size pixels", low=8)


def make_splits(cfg: SyntheticOptions, seed: int) -> tuple[Dataset, Dataset, DataSpec]:
    """Train and validation splits with multi-hot float targets (N, num_classes)."""
    gen = torch.Generator().manual_seed(seed)
    size, labels = cfg.image_size, cfg.num_classes
    angles = torch.arange(labels) * torch.pi / labels  # (L,)
    freqs = 2.0 + (torch.arange(labels) % 3).float()  # (L,) cycles per image
    coords = torch.linspace(0, 1, size)  # (S,)
    ys, xs = torch.meshgrid(coords, coords, indexing="ij")  # (S, S) each
    a, f = angles.view(1, labels, 1, 1), freqs.view(1, labels, 1, 1)  # (1, L, 1, 1)

    def split(n: int) -> TensorDictDataset:
        targets = (torch.rand(n, labels, generator=gen) < 0.3).float()  # (N, L) multi-hot
        phase = 2 * torch.pi * torch.rand(n, labels, 1, 1, generator=gen)  # (N, L, 1, 1)
        waves = torch.sin(2 * torch.pi * f * (xs * a.cos() + ys * a.sin()) + phase)  # (N, L, S, S)
        signal = (waves * targets.view(n, labels, 1, 1)).sum(dim=1, keepdim=True)  # (N, 1, S, S)
        noise = 0.5 * torch.randn(n, 3, size, size, generator=gen)  # (N, 3, S, S)
        return TensorDictDataset(signal + noise, targets)  # images (N, 3, S, S)

    train, val = split(cfg.num_samples), split(max(cfg.num_samples // 4, 1))
    return train, val, DataSpec(num_outputs=labels, in_channels=3, image_size=size)


def example_batch(spec: DataSpec, batch_size: int) -> dict[str, torch.Tensor]:
    """A random batch of what models of this task take (for tests and export)."""
    size = spec.image_size
    return {"inputs": torch.randn(batch_size, spec.in_channels, size, size)}  # (B, C, H, W)
