"""Token streams for language modelling: tokenisers and contiguous blocks of a stream.

A tokeniser turns text into token ids and back: `ByteTokenizer` (the UTF-8 bytes, 256
ids, nothing to fit) or `BpeTokenizer` (byte-level BPE from Hugging Face `tokenizers`,
trained on the training split only). Its `state()` goes into the dataset's state, saved
in every checkpoint, so `evaluate` and `generate` tokenise exactly as training did from
the checkpoint alone (`tokenizer_from_state`).

`TokenBlocks` is a map-style dataset over the start positions of blocks of one token
stream: sample i is the `block_size` tokens from `i * stride` (inputs) and the same
tokens shifted by one (targets). Being read by index, the training sampler shuffles the
blocks per epoch and a resumed run continues at the exact block where it stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import torch
from torch.utils.data import Dataset

from ..config import ConfigError
from . import Batch


class Tokenizer(Protocol):
    vocab_size: int

    def encode(self, text: str) -> torch.Tensor: ...  # (N,) int32 token ids

    def decode(self, ids: list[int]) -> str: ...

    def state(self) -> dict[str, Any]: ...  # what tokenizer_from_state rebuilds it from


class ByteTokenizer:
    """Every UTF-8 byte is a token: 256 ids, any text, nothing learnt."""

    vocab_size = 256

    def encode(self, text: str) -> torch.Tensor:
        data = bytearray(text.encode("utf-8"))
        if not data:
            return torch.zeros(0, dtype=torch.int32)
        return torch.frombuffer(data, dtype=torch.uint8).to(torch.int32)  # (N,)

    def decode(self, ids: list[int]) -> str:
        return bytes(ids).decode("utf-8", errors="replace")  # a cut character becomes U+FFFD

    def state(self) -> dict[str, Any]:
        return {"tokenizer": "byte"}


class BpeTokenizer:
    """Byte-level BPE (GPT-2's scheme) from the `tokenizers` package: any text encodes."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.vocab_size = tokenizer.get_vocab_size()

    @classmethod
    def train(cls, text: str, vocab_size: int) -> BpeTokenizer:
        """A tokeniser of at most `vocab_size` ids learnt from `text` (the training split)."""
        tokenizers = import_tokenizers()
        tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
        tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = tokenizers.decoders.ByteLevel()
        trainer = tokenizers.trainers.BpeTrainer(
            vocab_size=vocab_size,
            initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tokenizer.train_from_iterator(text.splitlines(keepends=True), trainer)
        return cls(tokenizer)

    def encode(self, text: str) -> torch.Tensor:
        lines = text.splitlines(keepends=True)  # a batch of lines: parallel, bounded pieces
        ids = [i for encoding in self.tokenizer.encode_batch(lines) for i in encoding.ids]
        return torch.tensor(ids, dtype=torch.int32)  # (N,)

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids)

    def state(self) -> dict[str, Any]:
        return {"tokenizer": "bpe", "bpe": self.tokenizer.to_str()}


def import_tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError:
        raise ConfigError(
            "data.tokenizer=bpe needs the tokenizers package: pip install -e '.[bpe]'"
        ) from None
    return tokenizers


def tokenizer_from_state(state: dict[str, Any]) -> Tokenizer:
    """The tokeniser a dataset saved in its state (none saved: bytes)."""
    kind = state.get("tokenizer", "byte")
    if kind == "byte":
        return ByteTokenizer()
    if kind == "bpe":
        return BpeTokenizer(import_tokenizers().Tokenizer.from_str(state["bpe"]))
    raise ConfigError(f"unknown tokenizer {kind!r} in the saved data state")


class TokenBlocks(Dataset):
    """Blocks of `block_size` tokens of one stream, starting every `stride` tokens; sample i
    is {"inputs": tokens[s : s + T], "targets": tokens[s + 1 : s + T + 1]}, s = i * stride."""

    held_in_memory = True  # a batch is one gather from the token tensor (__getitems__)

    def __init__(self, tokens: torch.Tensor, block_size: int, stride: int = 0) -> None:
        self.tokens, self.block_size = tokens, block_size  # tokens: (N,)
        self.stride = stride or block_size
        self.offsets = torch.arange(block_size + 1)  # (T + 1,)

    def __len__(self) -> int:
        return max((len(self.tokens) - self.block_size - 1) // self.stride + 1, 0)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if not 0 <= index < len(self):
            raise IndexError(index)
        start = index * self.stride
        chunk = self.tokens[start : start + self.block_size + 1].long()  # (T + 1,)
        return {"inputs": chunk[:-1], "targets": chunk[1:]}

    def __getitems__(self, indices: list[int] | torch.Tensor) -> Sequence[Any]:
        starts = torch.as_tensor(indices, dtype=torch.long) * self.stride  # (B,)
        rows = self.tokens[starts[:, None] + self.offsets].long()  # (B, T + 1)
        return Batch({"inputs": rows[:, :-1].contiguous(), "targets": rows[:, 1:].contiguous()})
