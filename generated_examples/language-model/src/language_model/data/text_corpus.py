"""text_corpus: a text corpus for language modelling (ptgen dataset kind "text-corpus").

`data.root` is one UTF-8 text file, whose last `data.val_fraction` is held out for
validation (one contiguous stretch: no block straddles the two splits), or a folder:
with train.txt (and val.txt, and optionally test.txt, read only by `evaluate --split
test`), or else every *.txt file under it, in sorted order, joined and split as one file.

`data.tokenizer=byte` (the default) reads the UTF-8 bytes as tokens (256 ids, nothing to
fit); `data.tokenizer=bpe` trains a byte-level BPE tokeniser of at most `data.vocab_size`
ids (Hugging Face `tokenizers`, the `bpe` extra) on the training split only. Either way
the tokeniser goes into `bundle.state`, saved in every checkpoint, so `evaluate` and
`generate` tokenise as training did from the checkpoint alone. The token stream is cut
into blocks of `data.block_size` tokens (`_tokens.TokenBlocks`): training blocks start
every `data.stride` tokens (0: block_size, no overlap) and are shuffled per epoch;
validation blocks never overlap, so every token is scored once. The token ids of
each split (and the trained BPE tokeniser) are cached in `data.cache_dir` (empty: a
`.cache` folder beside the data; none where that cannot be written) and memory-mapped by
the next run, a resumed one and `evaluate`, which print "reusing the ... cached in
..."; a changed file, tokeniser or data.vocab_size tokenises again (`_tokens.TokenCache`).
With an empty `data.root` the project's synthetic text is used instead. This file is yours: `ptgen
update` never touches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset

from ..config import ConfigError, option
from ..tasks import DataSpec
from . import DataBundle, read_text
from ._synthetic import SyntheticOptions, make_splits
from ._tokens import ByteTokenizer, TokenBlocks, TokenCache, Tokenizer, tokenizer_from_state


@dataclass
class Options(SyntheticOptions):
    """[data] options of this dataset: set them with --set data.KEY=VALUE.

    The synthetic options are used while `root` is empty; `block_size` is the length of
    every block of real text too."""

    root: str = option(
        "", "a .txt file, or a folder of train.txt/val.txt or of *.txt files; empty: synthetic"
    )
    tokenizer: str = option(
        "byte",
        "byte: UTF-8 bytes (256 ids); bpe: BPE trained on the training split",
        choices=("byte", "bpe"),
    )
    vocab_size: int = option(2048, "data.tokenizer=bpe: the most token ids", low=257)
    val_fraction: float = option(
        0.1, "share of the text held out (its end) when there is no val.txt", low=0.0, high=1.0
    )
    stride: int = option(
        0, "tokens between training block starts (0: block_size, no overlap)", low=0
    )
    cache_dir: str = option("", "folder of the token cache (empty: .cache beside the data)")


def build(cfg: Options, seed: int, state: dict[str, Any] | None = None) -> DataBundle:
    if not cfg.root:
        return DataBundle(*make_splits(cfg, seed))
    root = Path(cfg.root).expanduser()
    texts = read_splits(root, cfg.val_fraction)
    beside = root if root.is_dir() else root.parent
    cache = TokenCache(
        Path(cfg.cache_dir).expanduser() if cfg.cache_dir else beside / ".cache", root
    )
    if state:
        tokenizer = tokenizer_from_state(state)
    elif cfg.tokenizer == "bpe":
        tokenizer = cache.train_bpe(texts["train"], cfg.vocab_size)
    else:
        tokenizer = ByteTokenizer()
    train = blocks(cache, tokenizer, texts["train"], cfg.block_size, cfg.stride, "training", root)
    val = blocks(cache, tokenizer, texts["val"], cfg.block_size, 0, "validation", root)
    spec = DataSpec(num_outputs=tokenizer.vocab_size, block_size=cfg.block_size)
    test_path = root / "test.txt" if root.is_dir() and (root / "test.txt").is_file() else None

    def load_test() -> Dataset:
        return blocks(cache, tokenizer, read_text(test_path), cfg.block_size, 0, "test", root)

    return DataBundle(
        train, val, spec, state=tokenizer.state(), load_test=load_test if test_path else None
    )


def read_splits(root: Path, val_fraction: float) -> dict[str, str]:
    """The training and validation text of `root` (see the module docstring)."""
    if root.is_dir() and (root / "train.txt").is_file():
        if not (root / "val.txt").is_file():
            return hold_out(read_text(root / "train.txt"), val_fraction, root / "train.txt")
        return {"train": read_text(root / "train.txt"), "val": read_text(root / "val.txt")}
    if root.is_dir():
        files = text_files(root)
        if not files:
            raise ConfigError(f"data.root {root} holds no train.txt and no *.txt file")
        return hold_out("\n".join(read_text(path) for path in files), val_fraction, root)
    if not root.is_file():
        raise ConfigError(f"data.root {root} does not exist: give a text file or a folder")
    return hold_out(read_text(root), val_fraction, root)


def text_files(root: Path) -> list[Path]:
    """The *.txt files under `root` in sorted order, leaving out hidden files and folders."""
    found = root.rglob("*.txt")
    return sorted(
        p for p in found if not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def hold_out(text: str, fraction: float, where: Path) -> dict[str, str]:
    """The text's start for training, its last `fraction` for validation."""
    cut = len(text) - round(len(text) * fraction)
    if not 0 < cut < len(text):
        raise ConfigError(
            f"{where}: data.val_fraction={fraction} leaves no text for training or "
            "validation; choose another, or give a folder with train.txt and val.txt"
        )
    return {"train": text[:cut], "val": text[cut:]}


def blocks(
    cache: TokenCache,
    tokenizer: Tokenizer,
    text: str,
    block_size: int,
    stride: int,
    split: str,
    root: Path,
) -> TokenBlocks:
    tokens = cache.encode(tokenizer, text, split, least=block_size + 1)  # (N,)
    dataset = TokenBlocks(tokens, block_size, stride)
    if len(dataset) == 0:
        raise ConfigError(
            f"{root}: the {split} text has {len(tokens)} tokens, too few for one block of "
            f"data.block_size={block_size} (+1); add text or lower data.block_size"
        )
    return dataset
