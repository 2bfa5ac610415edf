"""Batching token sequences: variable length (padded per batch) or fixed length.

Variable length: `pad_collate` pads each batch to its own longest sequence and returns
the lengths and a padding mask; `BucketBatchSampler` optionally batches similar lengths
together, so less of each batch is padding. Fixed length: `PadTo` pads or cuts every
sample to `data.max_length` inside the dataset, so the default collation stacks them; the
mask comes from the pad token. Models take the same (inputs, lengths, padding_mask) from
both.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import Dataset, Sampler

from ..tasks import DataSpec
from . import DataBundle, ResumableSampler

PAD_INDEX = 0


class Sequences(Sequence):
    """A batch of token sequences fetched at once (TokenDataset.__getitems__): every
    sample's ids one after another, (sum of lengths,), with the lengths (B,) and targets
    (B,). `pad_collate` pads it in one operation; to any other collate function it is the
    usual list of sample dicts."""

    def __init__(self, tokens: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor) -> None:
        self.tokens, self.lengths, self.targets = tokens, lengths, targets
        self.begins = torch.cumsum(lengths, 0) - lengths  # (B,) where each sample's ids begin

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:  # type: ignore[override]
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        start = int(self.begins[index])
        tokens = self.tokens[start : start + int(self.lengths[index])]  # (T,)
        return {"inputs": tokens, "targets": self.targets[index]}

    def padded(self, length: int | None, pad_index: int) -> dict[str, torch.Tensor]:
        """What pad_collate makes of the samples, without a tensor per sample."""
        width = int(self.lengths.max()) if length is None else length
        positions = torch.arange(width)  # (T,)
        padding_mask = positions[None, :] >= self.lengths[:, None]  # (B, T)
        inputs = torch.full(padding_mask.shape, pad_index, dtype=self.tokens.dtype)  # (B, T)
        inputs[~padding_mask] = self.tokens  # row by row, in order
        return {
            "inputs": inputs,
            "lengths": self.lengths,
            "padding_mask": padding_mask,
            "targets": self.targets,
        }


def pad_collate(
    batch: Sequence[dict[str, torch.Tensor]], length: int | None = None, pad_index: int = PAD_INDEX
) -> dict[str, torch.Tensor]:
    """Pad 1-D token tensors to the longest in the batch (or to `length`), with lengths and
    a padding mask; samples without targets (predict's) give a batch without them.

    Example, two samples of lengths 3 and 1:
        [{"inputs": tensor([5, 6, 7]), "targets": tensor(1)},
         {"inputs": tensor([8]),       "targets": tensor(0)}]
    becomes
        {"inputs":       tensor([[5, 6, 7], [8, 0, 0]]),          # (B, T)
         "lengths":      tensor([3, 1]),                          # (B,)
         "padding_mask": tensor([[False, False, False],
                                 [False, True,  True ]]),         # (B, T), True = padding
         "targets":      tensor([1, 0])}                          # (B,)
    The mask follows PyTorch's `src_key_padding_mask` convention (True marks padding).
    `pad_index` fills the padding (a Hugging Face tokenizer's pad token, say). A batch
    fetched at once (`Sequences`) is padded in one operation, to the same tensors.
    """
    if isinstance(batch, Sequences) and (length is None or int(batch.lengths.max()) <= length):
        return batch.padded(length, pad_index)
    sequences = [item["inputs"] for item in batch]
    inputs = pad_sequence(sequences, batch_first=True, padding_value=pad_index)  # (B, T)
    if length is not None:
        inputs = F.pad(inputs, (0, length - inputs.shape[1]), value=pad_index)  # (B, length)
    lengths = torch.tensor([len(s) for s in sequences], dtype=torch.long)  # (B,)
    positions = torch.arange(inputs.shape[1])  # (T,)
    padding_mask = positions[None, :] >= lengths[:, None]  # (B, T)
    padded = {"inputs": inputs, "lengths": lengths, "padding_mask": padding_mask}
    if "targets" in batch[0]:
        padded["targets"] = torch.stack([item["targets"] for item in batch])  # (B,)
    return padded


class PadTo(Dataset):
    """Every sample padded (or cut) to `length` tokens, with its length and padding mask.

    {"inputs": tensor([5, 6, 7]), "targets": tensor(1)} with length 5 becomes
    {"inputs": tensor([5, 6, 7, 0, 0]), "lengths": tensor(3),
     "padding_mask": tensor([False, False, False, True, True]), "targets": tensor(1)}
    """

    def __init__(self, dataset: Dataset, length: int, pad_index: int = PAD_INDEX) -> None:
        self.dataset, self.length, self.pad_index = dataset, length, pad_index

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        item = self.dataset[index]
        tokens = item["inputs"][: self.length]  # (T,), T <= length
        inputs = torch.full((self.length,), self.pad_index, dtype=tokens.dtype)  # (L,)
        inputs[: len(tokens)] = tokens
        padding_mask = torch.arange(self.length) >= len(tokens)  # (L,), True = padding
        return {
            **item,
            "inputs": inputs,
            "lengths": (~padding_mask).sum(),
            "padding_mask": padding_mask,
        }


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of similar length (less padding), in an order fixed by (seed, epoch).

    The epoch's shuffled indices are cut into pools of 50 batches; each pool is sorted by
    length and cut into batches, and the batches are shuffled. Resuming skips whole
    batches, so a resumed run sees exactly the remaining ones.
    """

    def __init__(self, sampler: ResumableSampler, batch_size: int, lengths: list[int]) -> None:
        self.sampler, self.lengths, self.batch_size = sampler, lengths, batch_size

    def __iter__(self) -> Iterator[list[int]]:
        skip, self.sampler.skip = self.sampler.skip, 0
        indices = list(self.sampler)  # the full epoch's shuffled shard
        self.sampler.skip = skip
        pool = self.batch_size * 50
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
        total, skip = len(self.sampler) + self.sampler.skip, self.sampler.skip
        return total // self.batch_size - skip // self.batch_size


def variable_length(
    train: Dataset,
    val: Dataset,
    spec: DataSpec,
    bucket: bool,
    state: dict[str, Any] | None = None,
    load_test: Callable[[], Dataset] | None = None,
    pad_index: int = PAD_INDEX,
) -> DataBundle:
    """A bundle whose batches are padded to their own longest sequence (optionally bucketed:
    the lengths are read once from the training split, or its `lengths()` when it has it)."""
    batches = None
    if bucket:
        if hasattr(train, "lengths"):  # a TokenDataset's, from its offsets: no sample read
            lengths = train.lengths()
        else:
            lengths = [len(train[i]["inputs"]) for i in range(len(train))]
        batches = functools.partial(BucketBatchSampler, lengths=lengths)
    collate = functools.partial(pad_collate, pad_index=pad_index)
    return DataBundle(train, val, spec, collate, state or {}, batches, load_test)


def fixed_length(
    train: Dataset,
    val: Dataset,
    spec: DataSpec,
    length: int,
    state: dict[str, Any] | None = None,
    load_test: Callable[[], Dataset] | None = None,
    pad_index: int = PAD_INDEX,
) -> DataBundle:
    """A bundle whose samples are all padded or cut to `length` tokens."""
    test = (lambda: PadTo(load_test(), length, pad_index)) if load_test else None
    padded = PadTo(train, length, pad_index), PadTo(val, length, pad_index)
    return DataBundle(*padded, spec, state=state or {}, load_test=test)
