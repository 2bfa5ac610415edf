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

`TokenCache` keeps the token ids of every split (and a BPE tokeniser trained on the
training split) on disk, so that the next run, a resumed one and `evaluate` skip the
tokenising: an entry is named by a hash of the split's text and of the tokeniser, so a
changed file or tokeniser is never read from an old entry.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import torch
from torch.utils.data import Dataset

from ..config import ConfigError
from . import Batch, note


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


def digest(value: Any) -> str:
    """A short hash of text, bytes or a JSON value."""
    if isinstance(value, str):
        value = value.encode()
    elif not isinstance(value, bytes):
        value = json.dumps(value, sort_keys=True).encode()
    return hashlib.sha256(value).hexdigest()[:16]


class TokenCache:
    """Token ids of a corpus's splits, and the BPE tokeniser trained on it, cached on disk.

    Entries are files in `folder`, `<data>-<where>-<split>-<key>-<text>.pt`: `where`
    hashes data.root's path, `key` the tokeniser (its saved state) and this module's
    source, `text` the split's text. A changed file, tokeniser or tokenising code gives
    another name, so a stale entry is never read; writing an entry (a temporary file,
    renamed once whole) removes those of the same data and split with another text (the
    file changed since). Where `folder` cannot be written there is no cache: a note says
    so once, and nothing is written."""

    def __init__(self, folder: Path, where: Path) -> None:
        self.folder: Path | None = folder
        self.where = str(where.resolve())  # the data.root the entries belong to
        self.code = digest(Path(__file__).read_bytes())

    def encode(self, tokenizer: Tokenizer, text: str, split: str, least: int = 0) -> torch.Tensor:
        """`tokenizer.encode(text)` (N,) int32: memory-mapped from the cache when it has it;
        fewer than `least` tokens (too few to use: the caller refuses them) are not cached."""
        name = self.name(split, tokenizer.state(), text, "pt")
        if self.folder is not None and (self.folder / name).is_file():
            try:
                path = self.folder / name
                tokens = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
                note(f"reusing the {split} tokens cached in {path}")
                return tokens
            except (OSError, RuntimeError, EOFError, ValueError):  # damaged: tokenise again
                pass
        tokens = tokenizer.encode(text)  # (N,)
        if len(tokens) >= least and self.write(name, lambda file: torch.save(tokens, file)):
            note(f"{split} tokens cached in {self.folder / name}")
        return tokens

    def train_bpe(self, text: str, vocab_size: int) -> BpeTokenizer:
        """`BpeTokenizer.train(text, vocab_size)`, from the cache when it has trained it."""
        name = self.name("bpe", {"vocab_size": vocab_size}, text, "json")
        if self.folder is not None and (self.folder / name).is_file():
            try:
                saved = (self.folder / name).read_text(encoding="utf-8")
                tokenizer = BpeTokenizer(import_tokenizers().Tokenizer.from_str(saved))
                note(f"reusing the BPE tokeniser cached in {self.folder / name}")
                return tokenizer
            except Exception:  # a damaged entry (tokenizers raises plain Exceptions): train
                pass
        tokenizer = BpeTokenizer.train(text, vocab_size)
        self.write(name, lambda file: file.write(tokenizer.state()["bpe"].encode()))
        return tokenizer

    def give_up(self, exc: Exception) -> None:
        """No cache from here on (its folder cannot be written), said once."""
        reason = getattr(exc, "strerror", None) or exc
        note(f"no token cache ({self.folder}: {reason}); data.cache_dir sets its place")
        self.folder = None

    def name(self, split: str, settings: dict[str, Any], text: str, suffix: str) -> str:
        place = f"{Path(self.where).name}-{digest(self.where)}-{split}"
        return f"{place}-{digest([settings, self.code])}-{digest(text)}.{suffix}"

    def write(self, name: str, save: Any) -> bool:
        """Write an entry with `save(file)`: to a temporary file, renamed once whole; then
        remove the entries this one replaces (the same key, another text). False: no cache."""
        if self.folder is None:
            return False
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=f".{name}.")
        except OSError as exc:  # read-only data, or no such place
            self.give_up(exc)
            return False
        try:
            with os.fdopen(handle, "wb") as file:
                save(file)
            os.chmod(temporary, 0o644)  # the cache is for every user of the data
            os.replace(temporary, self.folder / name)
        except (OSError, RuntimeError) as exc:  # a full disk, say: no entry, no half file
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            self.give_up(exc)
            return False
        place, text = name.rsplit("-", 2)[0], name.rsplit("-", 1)[1]  # <data>-<where>-<split>
        for old in self.folder.glob(f"{glob.escape(place)}-*"):
            if old.name.rsplit("-", 1)[1] != text:  # the same data and split, another text
                with contextlib.suppress(OSError):
                    old.unlink()
        return True


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
