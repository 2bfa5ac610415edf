"""Synthetic multi-label token sequences, for smoke runs and for datasets without a root.

Each label has its own marker tokens; a sequence of random tokens holds markers of each of
its labels (each present with probability 0.2, independently; some sequences hold none).
Everything is generated up front from the seed, so every run (and every DataLoader worker)
sees exactly the same samples.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import Dataset

from ..config import DataConfig, option
from ..tasks import DataSpec
from . import TensorDictDataset
from ._sequences import pad_collate


@dataclass
class SyntheticOptions(DataConfig):
    """[data] options of synthetic sequences (also the fallback of datasets without a root)."""

    num_classes: int = option(6, "synthetic data: number of labels", low=2)
    num_samples: int = option(
        512, "synthetic data: training samples (validation: a quarter)", low=1
    )
    max_length: int = option(64, "longest token sequence kept", low=4)
    vocab_size: int = option(1000, "vocabulary size, padding included", low=8)


def make_splits(cfg: SyntheticOptions, seed: int) -> tuple[Dataset, Dataset, DataSpec]:
    """Train and validation splits of random token sequences of varying length with
    multi-hot float targets (N, num_classes); each label plants its own marker tokens."""
    gen = torch.Generator().manual_seed(seed)
    vocab, labels = cfg.vocab_size, cfg.num_classes
    markers = torch.randperm(vocab - 1, generator=gen)[: labels * 4].view(labels, 4) + 1  # (L, 4)

    def sample(chosen: torch.Tensor) -> torch.Tensor:
        length = int(torch.randint(4, cfg.max_length + 1, (), generator=gen))
        tokens = torch.randint(1, vocab, (length,), generator=gen)  # (T,), 0 is padding
        for label in chosen.nonzero().flatten().tolist():
            where = torch.randint(0, length, (max(length // 8, 1),), generator=gen)
            tokens[where] = markers[label][torch.randint(0, 4, where.shape, generator=gen)]
        return tokens

    def split(n: int) -> TensorDictDataset:
        targets = (torch.rand(n, labels, generator=gen) < 0.2).float()  # (N, L) multi-hot
        return TensorDictDataset([sample(row) for row in targets], targets)

    train, val = split(cfg.num_samples), split(max(cfg.num_samples // 4, 1))
    return train, val, DataSpec(num_outputs=labels, vocab_size=vocab)


def example_batch(spec: DataSpec, batch_size: int) -> dict[str, torch.Tensor]:
    """A random padded batch of what models of this task take (for tests and export)."""
    lengths = torch.arange(batch_size) % 7 + 1  # (B,) lengths 1..7
    gen = torch.Generator().manual_seed(batch_size)
    tokens = [torch.randint(1, spec.vocab_size, (int(n),), generator=gen) for n in lengths]
    batch = pad_collate([{"inputs": t, "targets": torch.tensor(0)} for t in tokens])
    return {key: value for key, value in batch.items() if key != "targets"}
