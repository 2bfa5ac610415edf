"""Synthetic data with a learnable signal, for smoke runs and for datasets without a root.

Everything is generated up front from `seed`, so every run (and every DataLoader
worker) sees exactly the same samples.
"""

from __future__ import annotations

import torch
from torch.utils.data import Dataset

from ..config import DataConfig
from . import DataBundle, DataSpec
from ._collate import pad_collate


class TensorDictDataset(Dataset):
    """Samples as {"inputs": ..., "targets": ...} from tensors or lists of tensors."""

    def __init__(self, inputs: torch.Tensor | list[torch.Tensor], targets: torch.Tensor) -> None:
        self.inputs, self.targets = inputs, targets

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {"inputs": self.inputs[index], "targets": self.targets[index]}


def make_bundle(task: str, cfg: DataConfig, seed: int) -> DataBundle:
    builders = {
        "image-classification": _images,
        "sequence-classification": _sequences,
        "tabular-regression": _tabular,
    }
    return builders[task](cfg, torch.Generator().manual_seed(seed))


def _split_sizes(cfg: DataConfig) -> tuple[int, int]:
    return cfg.num_samples, max(cfg.num_samples // 4, 1)


def _images(cfg: DataConfig, gen: torch.Generator) -> DataBundle:
    """Each class is a colour tint plus a grating of its own orientation and frequency,
    at a random phase (so position does not matter), under heavy pixel noise."""
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

    train, val = (split(n) for n in _split_sizes(cfg))
    spec = DataSpec("image-classification", classes, in_channels=3, image_size=size)
    return DataBundle(train, val, spec)


def _sequences(cfg: DataConfig, gen: torch.Generator) -> DataBundle:
    """Random token sequences of varying length; each class plants its own marker tokens."""
    vocab, classes = cfg.vocab_size, cfg.num_classes
    markers = torch.randperm(vocab - 1, generator=gen)[: classes * 4].view(classes, 4) + 1  # (K, 4)

    def sample(label: int) -> torch.Tensor:
        length = int(torch.randint(4, cfg.max_length + 1, (), generator=gen))
        tokens = torch.randint(1, vocab, (length,), generator=gen)  # (T,), 0 is padding
        where = torch.randint(0, length, (max(length // 4, 1),), generator=gen)
        tokens[where] = markers[label][torch.randint(0, 4, where.shape, generator=gen)]
        return tokens

    def split(n: int) -> TensorDictDataset:
        labels = torch.randint(0, classes, (n,), generator=gen)
        return TensorDictDataset([sample(int(y)) for y in labels], labels)

    train, val = (split(n) for n in _split_sizes(cfg))
    spec = DataSpec("sequence-classification", classes, vocab_size=vocab)
    lengths = [len(x) for x in train.inputs]
    return DataBundle(train, val, spec, collate_fn=pad_collate, train_lengths=lengths)


def _tabular(cfg: DataConfig, gen: torch.Generator) -> DataBundle:
    """y = x @ w + noise: a linear signal any regressor can find."""
    weights = torch.randn(cfg.num_features, 1, generator=gen)  # (F, 1)

    def split(n: int) -> TensorDictDataset:
        x = torch.randn(n, cfg.num_features, generator=gen)  # (N, F)
        y = x @ weights + 0.1 * torch.randn(n, 1, generator=gen)  # (N, 1)
        return TensorDictDataset(x, y)

    train, val = (split(n) for n in _split_sizes(cfg))
    spec = DataSpec("tabular-regression", 1, num_features=cfg.num_features)
    return DataBundle(train, val, spec)
