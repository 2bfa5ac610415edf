"""Synthetic images with masks, for smoke runs and for datasets without a root.

Each image is pixel noise with a few shapes on it; class 0 is the background and class
k > 0 is a shape of its own kind (a disk for odd k, a square for even k) and colour tint.
The one-pixel border of every shape is marked `data.ignore_index` (unlabelled), as real
annotations often leave object boundaries. Everything is generated up front from the
seed, so every run (and every DataLoader worker) sees exactly the same samples.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset

from ..config import DataConfig, option
from ..tasks import DataSpec
from . import TensorDictDataset

SHAPES_PER_IMAGE = 3


@dataclass
class SyntheticOptions(DataConfig):
    """[data] options of synthetic images and masks (the fallback of datasets without a root)."""

    num_classes: int = option(
        4, "classes, the background (0) included (synthetic data, and id masks)", low=2
    )
    num_samples: int = option(
        256, "synthetic data: training samples (validation: a quarter)", low=1
    )
    image_size: int = option(32, "images are image_size x image_size pixels", low=8)
    ignore_index: int = option(
        255, "mask value of unlabelled pixels (no loss, not scored)", low=0, high=32767
    )


def boundary(masks: torch.Tensor) -> torch.Tensor:
    """Pixels (N, S, S) whose 3x3 neighbourhood holds more than one class."""
    padded = F.pad(masks.float().unsqueeze(1), (1, 1, 1, 1), mode="replicate")  # (N, 1, S+2, S+2)
    high = F.max_pool2d(padded, 3, stride=1)  # (N, 1, S, S)
    low = -F.max_pool2d(-padded, 3, stride=1)  # (N, 1, S, S)
    return (high != low).squeeze(1)  # (N, S, S)


def make_splits(cfg: SyntheticOptions, seed: int) -> tuple[Dataset, Dataset, DataSpec]:
    """Train and validation splits of images (N, 3, S, S) and masks (N, S, S) of class ids."""
    gen = torch.Generator().manual_seed(seed)
    size, classes = cfg.image_size, cfg.num_classes
    tints = 1.5 * torch.randn(classes, 3, 1, 1, generator=gen)  # (K, 3, 1, 1)
    coords = torch.arange(size).float()  # (S,)
    ys, xs = torch.meshgrid(coords, coords, indexing="ij")  # (S, S) each

    def split(n: int) -> TensorDictDataset:
        masks = torch.zeros(n, size, size, dtype=torch.long)  # (N, S, S) background
        for _ in range(SHAPES_PER_IMAGE):  # later shapes cover earlier ones
            kind = torch.randint(1, classes, (n, 1, 1), generator=gen)  # (N, 1, 1)
            centre = torch.rand(n, 2, 1, 1, generator=gen) * size  # (N, 2, 1, 1)
            radius = (0.1 + 0.15 * torch.rand(n, 1, 1, generator=gen)) * size  # (N, 1, 1)
            dy, dx = ys - centre[:, 0], xs - centre[:, 1]  # (N, S, S) each
            disk = dy.square() + dx.square() <= radius.square()  # (N, S, S)
            square = torch.maximum(dy.abs(), dx.abs()) <= radius  # (N, S, S)
            inside = torch.where(kind % 2 == 1, disk, square)  # (N, S, S)
            masks = torch.where(inside, kind, masks)  # (N, S, S)
        noise = torch.randn(n, 3, size, size, generator=gen)  # (N, 3, S, S)
        images = tints[masks].squeeze(-1).squeeze(-1).permute(0, 3, 1, 2) + noise  # (N, 3, S, S)
        masks[boundary(masks)] = cfg.ignore_index  # unlabelled edges
        return TensorDictDataset(images, masks)

    train, val = split(cfg.num_samples), split(max(cfg.num_samples // 4, 1))
    spec = DataSpec(
        num_outputs=classes, in_channels=3, image_size=size, ignore_index=cfg.ignore_index
    )
    return train, val, spec


def example_batch(spec: DataSpec, batch_size: int) -> dict[str, torch.Tensor]:
    """A random batch of what models of this task take (for tests and export)."""
    size = spec.image_size
    return {"inputs": torch.randn(batch_size, spec.in_channels, size, size)}  # (B, C, H, W)
