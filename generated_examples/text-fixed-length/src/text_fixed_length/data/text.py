"""text: labelled text for sequence classification (ptgen dataset kind "text").

`data.root` is one .tsv, .csv or .jsonl file (then `data.val_fraction` of the rows is
held out, the same rows every run) or a folder with train.tsv|csv|jsonl and, optionally,
val.tsv|csv|jsonl and test.tsv|csv|jsonl (read only by `evaluate --split test`). In a TSV
or CSV file the first row names the columns; in a JSONL file every line is one JSON
object and the first one's keys name the fields. The label is `data.target` (default:
the last column), the text is "text" (default: the first other column). A line that is
not UTF-8, not valid JSON or short of fields is an error naming the file and line. The
files are read by `data/_text_files.py`, which the "hf-text" kind shares.

Text is lower-cased and split into words and punctuation. The vocabulary (index 0 =
padding, 1 = unknown, then the most frequent training tokens, at most data.vocab_size in
all) and the label names come from the training split only and go into `bundle.state`,
saved in checkpoints and reused when `state` is passed back, so evaluation encodes text
exactly as training did, and so does `predict`, from the checkpoint alone (`raw_inputs`).
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

import torch

from ..config import ConfigError, option
from ..tasks import DataSpec
from . import DataBundle, TensorDictDataset
from ._inputs import RawInputs
from ._sequences import fixed_length
from ._synthetic import SyntheticOptions, make_splits
from ._text_files import build_vocab, encode, find_split, load_splits, read_rows, word_inputs


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


def to_dataset(
    rows: list[tuple[str, str]], state: dict[str, Any], max_length: int, split: str
) -> TensorDictDataset:
    index = {token: i for i, token in enumerate(state["vocab"])}
    label_index = {label: i for i, label in enumerate(state["classes"])}
    unknown = sorted({label for _, label in rows} - set(label_index))
    if unknown:
        raise ConfigError(f"{split} split has labels not seen in training: {', '.join(unknown)}")
    inputs = [encode(text, index, max_length) for text, _ in rows]
    targets = torch.tensor([label_index[label] for _, label in rows], dtype=torch.long)  # (N,)
    return TensorDictDataset(inputs, targets)


def build(cfg: Options, seed: int, state: dict[str, Any] | None = None) -> DataBundle:
    if not cfg.root:
        train, val, spec = make_splits(cfg, seed)
        return batching(train, val, spec, cfg, {})
    train_rows, val_rows = load_splits(cfg.root, cfg.target, cfg.val_fraction)
    if state is None:
        state = {
            "vocab": build_vocab([text for text, _ in train_rows], cfg.vocab_size),
            "classes": sorted({label for _, label in train_rows}),  # the label names
        }
    train = to_dataset(train_rows, state, cfg.max_length, "train")
    val = to_dataset(val_rows, state, cfg.max_length, "val")
    spec = DataSpec(num_outputs=len(state["classes"]), vocab_size=len(state["vocab"]))
    root = Path(cfg.root).expanduser()
    test_path = find_split(root, "test") if root.is_dir() else None

    def load_test() -> TensorDictDataset:
        return to_dataset(read_rows(test_path, cfg.target), state, cfg.max_length, "test")

    return batching(train, val, spec, cfg, state, load_test if test_path else None)


def batching(
    train: TensorDictDataset,
    val: TensorDictDataset,
    spec: DataSpec,
    cfg: Options,
    state: dict[str, Any],
    load_test: Callable[[], TensorDictDataset] | None = None,
) -> DataBundle:
    """Fixed length: every text padded or cut to data.max_length tokens in the dataset."""
    return fixed_length(train, val, spec, cfg.max_length, state, load_test)


def raw_inputs(cfg: Options, state: dict[str, Any]) -> RawInputs | None:
    """Texts (lines of a file, or a CSV/TSV/JSONL column), encoded exactly as in training;
    None for a model trained on the synthetic sequences (they have no text)."""
    if not state:
        return None
    return word_inputs(state["vocab"], cfg.max_length, fixed_length=True)
