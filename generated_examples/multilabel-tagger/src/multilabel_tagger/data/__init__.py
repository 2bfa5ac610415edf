"""Dataset components and their DataLoaders. Every module here not starting with "_" is a
component: an `Options` dataclass ([data] keys) and `build(cfg, seed, state) -> DataBundle`.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.data import (
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    Sampler,
    default_collate,
)

from ..config import Config, ConfigError, DataConfig, component
from ..runtime import DistInfo, kill_workers_at_exit, seed_worker
from ..tasks import DataSpec


@dataclass
class DataBundle:
    """A dataset component's result: the two splits and what the loaders need."""

    train: Dataset
    val: Dataset
    spec: DataSpec
    collate_fn: Callable[[list[Any]], dict[str, torch.Tensor]] | None = None
    # fitted on the training split (vocabulary, normalisation, class names); checkpoints
    # save it, so that evaluation prepares data exactly as training did
    state: dict[str, Any] = field(default_factory=dict)
    load_test: Callable[[], Dataset] | None = None  # the test split, read by evaluate only

    def train_targets(self) -> torch.Tensor:
        """The training split's targets (for train.pos_weight=auto):
        the dataset's `targets` (a tensor or a list) when it has that attribute, as
        TensorDictDataset does; otherwise every sample is read once."""
        if isinstance(self.train, IterableDataset):
            raise ConfigError(
                "a streamed dataset has no targets to count; these need a dataset read by "
                "index: train.pos_weight=auto"
            )
        targets = getattr(self.train, "targets", None)
        if targets is None:
            targets = [self.train[i]["targets"] for i in range(len(self.train))]
        if isinstance(targets, torch.Tensor):
            return targets
        return torch.stack([torch.as_tensor(t) for t in targets])


class TensorDictDataset(Dataset):
    """Samples {"inputs": ..., "targets": ...} from tensors (or lists of tensors) by index."""

    held_in_memory = True  # see in_memory

    def __init__(self, inputs: torch.Tensor | list[torch.Tensor], targets: torch.Tensor) -> None:
        self.inputs, self.targets = inputs, targets

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {"inputs": self.inputs[index], "targets": self.targets[index]}

    def __getitems__(self, indices: list[int] | torch.Tensor) -> Sequence[Any]:
        """A batch's samples, one index operation per tensor (a list is read one by one)."""
        if not isinstance(self.inputs, torch.Tensor):
            return [self[i] for i in indices]
        rows = torch.as_tensor(indices, dtype=torch.long)  # (B,)
        return Batch({"inputs": self.inputs[rows], "targets": self.targets[rows]})


class Batch(Sequence):
    """Samples fetched together, stacked (`collate` keeps them; others see sample dicts)."""

    def __init__(self, tensors: dict[str, torch.Tensor]) -> None:
        self.tensors = tensors

    def __len__(self) -> int:
        return len(next(iter(self.tensors.values())))

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:  # type: ignore[override]
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        return {key: value[index] for key, value in self.tensors.items()}


def collate(samples: Sequence[Any]) -> Any:
    """The default collation, skipped for a Batch (its samples are stacked already)."""
    return samples.tensors if isinstance(samples, Batch) else default_collate(samples)


def build_data(cfg: DataConfig, seed: int, state: dict[str, Any] | None = None) -> DataBundle:
    """The configured dataset component's bundle; pass a checkpoint's `state` to reuse it."""
    return component("data", cfg.name).build(cfg, seed, state)


def note(message: str) -> None:
    """Tell the user about their data (rows dropped, ...) on stderr, from rank 0 only."""
    if os.environ.get("RANK", "0") == "0":
        print(f"data: {message}", file=sys.stderr, flush=True)


def hold_out(count: int, fraction: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices (train, val) holding out `fraction` of `count`; a fixed seed, not train.seed."""
    order = torch.randperm(count, generator=torch.Generator().manual_seed(0))  # (count,)
    n_val = min(max(round(count * fraction), 1), count - 1)
    return order[n_val:], order[:n_val]


class ResumableSampler(Sampler[int]):
    """Shuffled, rank-sharded indices from (seed, epoch) alone, in DistributedSampler's order,
    drawn as a tensor and handed out a chunk at a time (2M Python ints take ~70 MB); the
    samples a resumed epoch consumed already are skipped.
    A dataset with a `set_epoch` method (augmentation) is told the epoch too.
    """

    def __init__(self, dataset: Dataset, info: DistInfo, seed: int) -> None:
        self.dataset = dataset
        self.inner = DistributedSampler(  # (dataset, num_replicas, rank)
            dataset, info.world_size, info.rank, shuffle=True, seed=seed, drop_last=True
        )
        self.skip = 0

    def set_epoch(self, epoch: int, skip: int = 0) -> None:
        self.inner.set_epoch(epoch)
        self.skip = skip
        if hasattr(self.dataset, "set_epoch"):  # before the loader starts the epoch's batches
            self.dataset.set_epoch(epoch)

    def __iter__(self) -> Iterator[int]:
        mine = self._indices()[self.skip :]
        return (i for chunk in mine.split(4096) for i in chunk.tolist())

    def _indices(self) -> torch.Tensor:
        """This rank's indices of the epoch, (num_samples,), before the skip."""
        sampler = self.inner  # every rank draws the same order and takes its own share
        generator = torch.Generator().manual_seed(sampler.seed + sampler.epoch)
        # int32 draws the same order as int64, in half the memory
        kind = torch.int32 if len(self.dataset) < 2**31 else torch.int64
        order = torch.randperm(len(self.dataset), generator=generator, dtype=kind)
        return order[: sampler.total_size][sampler.rank :: sampler.num_replicas]

    def __len__(self) -> int:
        return len(self.inner) - self.skip


class TensorBatches(Sampler[torch.Tensor]):
    """A ResumableSampler's batches (remainder dropped) as index tensors, for data in memory."""

    def __init__(self, sampler: ResumableSampler, batch_size: int) -> None:
        self.sampler, self.batch_size = sampler, batch_size

    def __iter__(self) -> Iterator[torch.Tensor]:
        size, mine = self.batch_size, self.sampler._indices()[self.sampler.skip :]
        return (mine[i : i + size] for i in range(0, len(self) * size, size))  # views, lazily

    def __len__(self) -> int:
        return len(self.sampler) // self.batch_size


class MemoryLoader(DataLoader):
    """DataLoader's batches; without workers or pinning, not through its iterator (~15 us each)."""

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers or self.pin_memory or not hasattr(self.dataset, "__getitems__"):
            return super().__iter__()
        return (self.collate_fn(self.dataset.__getitems__(rows)) for rows in self.batch_sampler)


def build_loaders(
    bundle: DataBundle,
    config: Config,
    info: DistInfo,
    device: torch.device,
) -> tuple[DataLoader, DataLoader, ResumableSampler]:
    """Training and validation loaders; the sampler is returned for set_epoch/resume."""
    sampler = ResumableSampler(bundle.train, info, config.train.seed)
    batch_size = config.train.batch_size
    if len(sampler.inner) < batch_size:
        fits = f": --set train.batch_size={len(sampler.inner)}" if len(sampler.inner) else ""
        raise ConfigError(
            f"the training split has {len(bundle.train)} samples, fewer than one batch of "
            f"{batch_size} per process; lower train.batch_size{fits}"
        )
    if len(bundle.val) == 0:
        raise ConfigError("the validation split is empty: give it samples (or a larger data set)")
    workers = worker_count(config.data.num_workers, bundle.train)
    if config.data.num_workers == "auto":
        note(f"{workers} loader worker process(es) per training process (data.num_workers=auto)")
    common = loader_options(workers, device, config.train.seed)
    common["collate_fn"] = bundle.collate_fn or collate
    if in_memory(bundle.train):
        batches = TensorBatches(sampler, batch_size)
        train = MemoryLoader(bundle.train, batch_sampler=batches, **common)
    else:
        train = DataLoader(bundle.train, batch_size, sampler=sampler, drop_last=True, **common)
    return train, eval_loader(bundle, bundle.val, config, info, device), sampler


def eval_loader(
    bundle: DataBundle, split: Dataset, config: Config, info: DistInfo, device: torch.device
) -> DataLoader:
    """Batches of an evaluation split in order, every sample once across ranks."""
    workers = worker_count(config.data.num_workers, split)
    common = loader_options(workers, device, config.train.seed)
    sampler = range(info.rank, len(split), info.world_size)  # each sample once across ranks
    batch_size = eval_batch_size(config, split)
    return DataLoader(
        split, batch_size, sampler=sampler, collate_fn=bundle.collate_fn or collate, **common
    )


EVAL_BATCH_BYTES = 16 * 2**20  # auto: the inputs of an evaluation batch, at most
EVAL_BATCH_MULTIPLE = 64  # auto: and at most this many training batches' samples


def eval_batch_size(config: Config, split: Dataset) -> int:
    """train.eval_batch_size; auto (0): for a split in memory, train.batch_size times the
    largest power of two up to 64 whose inputs fit 16 MiB; else train.batch_size."""
    size = config.train.batch_size
    if config.train.eval_batch_size > 0:
        return config.train.eval_batch_size
    if not in_memory(split) or len(split) <= size:
        return size
    sample = split[0]["inputs"]
    multiple = EVAL_BATCH_MULTIPLE
    while multiple > 1 and multiple * size * sample.nbytes > EVAL_BATCH_BYTES:
        multiple //= 2
    return size * multiple


def in_memory(dataset: Dataset) -> bool:
    """Whether a split says (`held_in_memory`) its batches are slices of data in memory."""
    return bool(getattr(dataset, "held_in_memory", False))


def worker_count(setting: int | str, dataset: Dataset) -> int:
    """data.num_workers as a number; "auto": 0 for data in memory or where workers cannot
    start, else the usable cores (shared by torchrun's processes here) less one."""
    if setting != "auto":
        return int(setting)
    if in_memory(dataset) or not workers_can_start():
        return 0
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    cores = len(usable) if usable else os.cpu_count() or 1
    return max(cores // int(os.environ.get("LOCAL_WORLD_SIZE", "1")) - 1, 0)


def workers_can_start() -> bool:
    """Not in a daemonic process (it may have no children), and with working queues."""
    if multiprocessing.current_process().daemon:
        return False
    try:
        multiprocessing.get_context().Queue().close()
    except (OSError, ImportError, NotImplementedError):
        return False
    return True


def loader_options(num_workers: int, device: torch.device, seed: int) -> dict[str, Any]:
    """DataLoader settings that are valid together (the guide's set raises with 0 workers)."""
    if num_workers > 0:
        kill_workers_at_exit()
    return {
        "num_workers": num_workers,
        "pin_memory": device.type == "cuda",  # pinned memory only helps host->CUDA copies
        "persistent_workers": num_workers > 0,  # only allowed with worker processes
        "worker_init_fn": seed_worker,
        # A dedicated generator: worker seeds never draw from (or disturb) the global RNG.
        "generator": torch.Generator().manual_seed(seed),
    }
