"""text: labelled text for sequence classification (ptgen dataset kind "text").

`data.root` is one .tsv, .csv or .jsonl file (then `data.val_fraction` of the rows is
held out, the same rows every run) or a folder with train.tsv|csv|jsonl and, optionally,
val.tsv|csv|jsonl and test.tsv|csv|jsonl (read only by `evaluate --split test`). In a TSV
or CSV file the first row names the columns; in a JSONL file every line is one JSON
object and the first one's keys name the fields. The label is `data.target` (default:
the last column), the text is "text" (default: the first other column). A line that is
not UTF-8, not valid JSON or short of fields is an error naming the file and line. The
files are read by `data/_text_files.py`, which the "hf-text" kind shares.

Text is lower-cased and split into words and punctuation (`tokenize`). The vocabulary
(index 0 = padding, 1 = unknown, then the most frequent training tokens, at most
data.vocab_size in all) and the label names come from the training split only and go
into `bundle.state`, saved in checkpoints and reused when `state` is passed back, so
evaluation encodes text exactly as training did, and so does `predict`, from the
checkpoint alone (`raw_inputs`).

The files are tokenised once, streaming (bounded memory for any number of lines), into
arrays: one flat int32 array of token ids, int64 offsets and labels; a sample is a
slice. They are cached in `data.cache_dir` (empty: a `.cache` folder beside the data)
and memory-mapped by the next run, which prints "reusing the tokenised text cached in
..."; a changed file, max_length, vocab_size, target or val_fraction tokenises again.
To tokenise differently, write your own `tokenize` here and pass it to
`tokenised_splits`.
Sequences are cut to data.max_length tokens and padded to
data.max_length in the dataset (fixed length), so batches need no custom collation.
With an empty `data.root` the project's synthetic sequences are used instead. This
file is yours: `ptgen update` never touches it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset

from ..config import option
from ..tasks import DataSpec
from . import DataBundle
from ._inputs import RawInputs
from ._sequences import fixed_length
from ._synthetic import SyntheticOptions, make_splits
from ._text_files import (
    TokenSettings,
    find_split,
    split_files,
    tokenised_splits,
    tokenize,
    word_inputs,
)


@dataclass
class Options(SyntheticOptions):
    """[data] options of this dataset: set them with --set data.KEY=VALUE.

    The synthetic options are used while `root` is empty; `vocab_size` also caps the
    vocabulary built from real text, and `max_length` cuts every text."""

    root: str = option(
        "",
        "a .tsv/.csv/.jsonl file, or a folder with train.tsv|csv|jsonl (and val); empty: synthetic",
    )
    target: str = option("", "the label column (empty: the last column)")
    val_fraction: float = option(
        0.2,
        "share of the rows held out for validation when there is no val file",
        low=0.0,
        high=1.0,
    )
    cache_dir: str = option(
        "", "folder of the tokenised-text cache (empty: .cache beside the data)"
    )


def build(cfg: Options, seed: int, state: dict[str, Any] | None = None) -> DataBundle:
    if not cfg.root:
        train, val, spec = make_splits(cfg, seed)
        return batching(train, val, spec, cfg, {})
    train_path, val_path = split_files(cfg.root)
    files = {"train": train_path} if val_path is None else {"train": train_path, "val": val_path}
    settings = TokenSettings(
        cfg.target, cfg.max_length, cfg.vocab_size, cfg.val_fraction, cfg.cache_dir
    )
    splits, state = tokenised_splits(files, settings, state, tokenize)
    spec = DataSpec(num_outputs=len(state["classes"]), vocab_size=len(state["vocab"]))
    root = Path(cfg.root).expanduser()
    test_path = find_split(root, "test") if root.is_dir() else None

    def load_test() -> Dataset:
        return tokenised_splits({"test": test_path}, settings, state, tokenize)[0]["test"]

    return batching(
        splits["train"], splits["val"], spec, cfg, state, load_test if test_path else None
    )


def batching(
    train: Dataset,
    val: Dataset,
    spec: DataSpec,
    cfg: Options,
    state: dict[str, Any],
    load_test: Callable[[], Dataset] | None = None,
) -> DataBundle:
    """Fixed length: every text padded or cut to data.max_length tokens in the dataset."""
    return fixed_length(train, val, spec, cfg.max_length, state, load_test)


def raw_inputs(cfg: Options, state: dict[str, Any]) -> RawInputs | None:
    """Texts (lines of a file, or a CSV/TSV/JSONL column), encoded exactly as in training;
    None for a model trained on the synthetic sequences (they have no text)."""
    if not state:
        return None
    return word_inputs(state["vocab"], cfg.max_length, True, label_column=cfg.target)
