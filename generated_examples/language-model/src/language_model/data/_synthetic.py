"""Synthetic text with a learnable signal, for smoke runs and for datasets without a root.

A made-up language: a few dozen random "words" of lower-case letters, each followed by
one of three successor words, lines of a few words. Within a word every next letter is
certain, so a language model's perplexity falls well below that of random bytes. The
text is tokenised as UTF-8 bytes (the default tokeniser, state {"tokenizer": "byte"})
and cut into contiguous blocks of `data.block_size` tokens. Everything is generated up
front from the seed, so every run (and every DataLoader worker) sees the same blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import Dataset

from ..config import DataConfig, option
from ..tasks import DataSpec
from ._tokens import ByteTokenizer, TokenBlocks


@dataclass
class SyntheticOptions(DataConfig):
    """[data] options of synthetic text (also the fallback of datasets without a root)."""

    num_samples: int = option(256, "synthetic data: training blocks (validation: a quarter)", low=1)
    block_size: int = option(64, "tokens per block: the model's context length", low=2)


def synthetic_text(num_chars: int, seed: int) -> str:
    """At least `num_chars` characters of the made-up language of this seed."""
    gen = torch.Generator().manual_seed(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = [
        "".join(letters[int(i)] for i in torch.randint(0, 26, (int(n),), generator=gen))
        for n in torch.randint(2, 8, (40,), generator=gen)
    ]
    successors = torch.randint(0, len(words), (len(words), 3), generator=gen)  # (40, 3)
    parts, size, word = [], 0, 0
    while size < num_chars:
        word = int(successors[word, int(torch.randint(0, 3, (), generator=gen))])
        end = "\n" if int(torch.randint(0, 8, (), generator=gen)) == 0 else " "
        parts.append(words[word] + end)
        size += len(parts[-1])
    return "".join(parts)


def make_splits(cfg: SyntheticOptions, seed: int) -> tuple[Dataset, Dataset, DataSpec]:
    """Train and validation blocks of one synthetic text (validation: its end)."""
    block, n_val = cfg.block_size, max(cfg.num_samples // 4, 1)
    tokens = ByteTokenizer().encode(synthetic_text((cfg.num_samples + n_val) * block + 2, seed))
    cut = cfg.num_samples * block + 1  # the training blocks' last target is tokens[cut - 1]
    train = TokenBlocks(tokens[:cut], block)
    val = TokenBlocks(tokens[cut - 1 :], block)
    return train, val, DataSpec(num_outputs=ByteTokenizer.vocab_size, block_size=block)


def example_batch(spec: DataSpec, batch_size: int) -> dict[str, torch.Tensor]:
    """A random batch of what models of this task take (for tests and export)."""
    gen = torch.Generator().manual_seed(batch_size)
    length = min(spec.block_size, 12)
    return {"inputs": torch.randint(0, spec.num_outputs, (batch_size, length), generator=gen)}
