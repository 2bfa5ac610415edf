"""Synthetic images with a learnable signal, for smoke runs and datasets without a root:
generated up front from the seed, so every run and loader worker sees the same samples.
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

    num_classes: int = option(10, "synthetic data: number of classes", low=2)
    num_samples: int = option(
        512, "synthetic data: training samples (validation: a quarter)", low=1
    )
    image_size: int = option(32, "images are image_size x image_size pixels", low=8)


def make_splits(cfg: SyntheticOptions, seed: int) -> tuple[Dataset, Dataset, DataSpec]:
    """Train and validation splits: each class a colour tint plus a grating of its own angle
    and frequency, at a random phase (position does not matter), under heavy pixel noise."""
    gen = torch.Generator().manual_seed(seed)
    size, classes = cfg.image_size, cfg.num_classes
    angles = torch.arange(classes) * torch.pi / classes  # (K,)
    freqs = 2.0 + (torch.arange(classes) % 3).float()  # (K,) cycles per image
    tints = 0.5 * torch.randn(classes, 3, 1, 1, generator=gen)  # (K, 3, 1, 1)
    coords = torch.linspace(0, 1, size)  # (S,)
    ys, xs = torch.meshgrid(coords, coords, indexing="ij")  # (S, S) each

    def split(n: int) -> TensorDictDataset:
        labels = torch.randint(0, classes, (n,), generator=gen)  # (N,)
        phase = 2 * torch.pi * torch.rand(n, 1, 1, generator=gen)  # (N, 1, 1)
        a, f = angles[labels].view(n, 1, 1), freqs[labels].view(n, 1, 1)  # (N, 1, 1)
        wave = torch.sin(2 * torch.pi * f * (xs * a.cos() + ys * a.sin()) + phase)  # (N, S, S)
        noise = torch.randn(n, 3, size, size, generator=gen)  # (N, 3, S, S)
        images = wave.unsqueeze(1) + tints[labels] + noise  # (N, 3, S, S)
        return TensorDictDataset(images, labels)

    train, val = split(cfg.num_samples), split(max(cfg.num_samples // 4, 1))
    return train, val, DataSpec(num_outputs=classes, in_channels=3, image_size=size)


def example_batch(spec: DataSpec, batch_size: int) -> dict[str, torch.Tensor]:
    """A random batch of what models of this task take (for tests and export)."""
    size = spec.image_size
    return {"inputs": torch.randn(batch_size, spec.in_channels, size, size)}  # (B, C, H, W)
