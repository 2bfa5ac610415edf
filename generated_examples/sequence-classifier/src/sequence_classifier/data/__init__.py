"""Dataset components and the DataLoaders built from them.

Every module in this package (not starting with "_") is a dataset component with a
`build(cfg, seed, state)` function returning a `DataBundle`; `data.name` picks one.
"""

from __future__ import annotations

import importlib
import itertools
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler, Sampler

from ..config import Config, ConfigError, DataConfig
from ..runtime import DistInfo, seed_worker


@dataclass
class DataSpec:
    """What a model needs to know about its data."""

    task: str
    num_outputs: int  # classes for classification, targets for regression
    in_channels: int = 0  # images
    image_size: int = 0  # images
    vocab_size: int = 0  # token sequences (index 0 is padding)
    num_features: int = 0  # tabular rows


@dataclass
class DataBundle:
    train: Dataset
    val: Dataset
    spec: DataSpec
    collate_fn: Callable[[list[Any]], dict[str, torch.Tensor]] | None = None
    # Tensors/plain values fitted on the training split (vocabulary, normalisation),
    # stored in checkpoints so evaluation prepares data exactly as training did.
    state: dict[str, Any] = field(default_factory=dict)
    # Per-sample lengths of the training split, for length bucketing (sequences only).
    train_lengths: list[int] | None = None


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def build_data(cfg: DataConfig, seed: int, state: dict[str, Any] | None = None) -> DataBundle:
    if cfg.name not in available():
        raise ConfigError(f"unknown dataset {cfg.name!r}; available: {', '.join(available())}")
    module = importlib.import_module(f"{__name__}.{cfg.name}")
    return module.build(cfg, seed, state)


class ResumableSampler(Sampler[int]):
    """Shuffled, rank-sharded indices whose order depends only on (seed, epoch).

    Wraps DistributedSampler (also for one process) and can skip the samples already
    consumed in the current epoch, so a resumed run sees exactly the remaining batches.
    """

    def __init__(self, dataset: Dataset, info: DistInfo, seed: int) -> None:
        self.inner = DistributedSampler(
            dataset,
            num_replicas=info.world_size,
            rank=info.rank,
            shuffle=True,
            seed=seed,
            drop_last=True,
        )
        self.skip = 0

    def set_epoch(self, epoch: int, skip: int = 0) -> None:
        self.inner.set_epoch(epoch)
        self.skip = skip

    def __iter__(self) -> Iterator[int]:
        return itertools.islice(iter(self.inner), self.skip, None)

    def __len__(self) -> int:
        return len(self.inner) - self.skip


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of similar length (less padding), in an order fixed by (seed, epoch)."""

    def __init__(self, sampler: ResumableSampler, lengths: list[int], batch_size: int) -> None:
        self.sampler, self.lengths, self.batch_size = sampler, lengths, batch_size

    def __iter__(self) -> Iterator[list[int]]:
        skip, self.sampler.skip = self.sampler.skip, 0
        indices = list(self.sampler)  # the full epoch's shuffled shard
        self.sampler.skip = skip
        pool = self.batch_size * 50  # sort within pools so batches stay shuffled
        batches = []
        for start in range(0, len(indices) - self.batch_size + 1, pool):
            chunk = sorted(indices[start : start + pool], key=self.lengths.__getitem__)
            batches += [
                chunk[i : i + self.batch_size] for i in range(0, len(chunk), self.batch_size)
            ]
        batches = [b for b in batches if len(b) == self.batch_size]
        epoch_seed = self.sampler.inner.seed + self.sampler.inner.epoch
        order = torch.randperm(len(batches), generator=torch.Generator().manual_seed(epoch_seed))
        return iter([batches[i] for i in order.tolist()][skip // self.batch_size :])

    def __len__(self) -> int:
        return (
            len(self.sampler) + self.sampler.skip
        ) // self.batch_size - self.sampler.skip // self.batch_size


class ShardSampler(Sampler[int]):
    """Every validation sample exactly once across ranks (no padding duplicates)."""

    def __init__(self, dataset: Dataset, info: DistInfo) -> None:
        self.indices = list(range(info.rank, len(dataset), info.world_size))

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices)

    def __len__(self) -> int:
        return len(self.indices)


def build_loaders(
    bundle: DataBundle, config: Config, info: DistInfo, device: torch.device
) -> tuple[DataLoader, DataLoader, ResumableSampler]:
    """Training and validation loaders; the sampler is returned for set_epoch/resume."""
    sampler = ResumableSampler(bundle.train, info, config.train.seed)
    batch_size = config.train.batch_size
    if len(sampler.inner) < batch_size:
        raise ConfigError(
            f"the training split has {len(bundle.train)} samples, fewer than one batch of "
            f"{batch_size} per process; lower train.batch_size"
        )
    common = loader_options(config.data.num_workers, device, config.train.seed)
    common["collate_fn"] = bundle.collate_fn
    if config.data.bucket_by_length and bundle.train_lengths is not None:
        batches = BucketBatchSampler(sampler, bundle.train_lengths, batch_size)
        train = DataLoader(bundle.train, batch_sampler=batches, **common)
    else:
        train = DataLoader(bundle.train, batch_size, sampler=sampler, drop_last=True, **common)
    val = DataLoader(bundle.val, batch_size, sampler=ShardSampler(bundle.val, info), **common)
    return train, val, sampler


def loader_options(num_workers: int, device: torch.device, seed: int) -> dict[str, Any]:
    """DataLoader settings that are valid together (the guide's set raises with 0 workers)."""
    return {
        "num_workers": num_workers,
        "pin_memory": device.type == "cuda",  # pinned memory only helps host->CUDA copies
        "persistent_workers": num_workers > 0,  # only allowed with worker processes
        "worker_init_fn": seed_worker,
        # A dedicated generator: worker seeds never draw from (or disturb) the global RNG.
        "generator": torch.Generator().manual_seed(seed),
    }
