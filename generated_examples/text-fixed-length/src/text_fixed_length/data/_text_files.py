"""Labelled text files: one .tsv/.csv file, or a folder with train.tsv|csv (and val).

The first row names the columns: the label column is `target` (default: the last column),
the text column is "text" (default: the first other column). TSV text is taken as it is
(a quote is a character, so one line is always one row); CSV follows the usual quoting.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ..config import ConfigError
from . import hold_out, read_text

Rows = list[tuple[str, str]]  # (text, label) pairs


def read_rows(path: Path, label_column: str) -> Rows:
    """(text, label) pairs from a .tsv (tab-separated) or .csv file with a header row."""
    if not path.is_file():
        raise FileNotFoundError(f"text file {path} does not exist")
    csv.field_size_limit(2**31 - 1)  # long documents are fine: max_length cuts them
    tsv = path.suffix.lower() in (".tsv", ".tab", ".txt")
    dialect = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if tsv else {"delimiter": ","}
    reader = csv.reader(io.StringIO(read_text(path), newline=""), **dialect)
    try:
        rows = [(reader.line_num, row) for row in reader if row]
    except csv.Error as exc:
        raise ConfigError(f"{path}:{reader.line_num}: {exc}") from None
    if len(rows) < 2:
        raise ConfigError(f"{path} needs a header row and at least one data row")
    header = [name.strip() for name in rows[0][1]]
    label = label_column or header[-1]
    if label not in header:
        raise ConfigError(f"{path} has no label column {label!r}; it has {', '.join(header)}")
    others = [name for name in header if name != label]
    if not others:
        raise ConfigError(f"{path} has no text column besides the label {label!r}")
    t, y = header.index(others[0] if "text" not in others else "text"), header.index(label)
    pairs = []
    for line, row in rows[1:]:
        if len(row) != len(header):
            raise ConfigError(f"{path}:{line}: {len(row)} fields, the header has {len(header)}")
        if not row[y].strip():
            raise ConfigError(f"{path}:{line}: the label ({label}) is empty")
        pairs.append((row[t], row[y].strip()))
    return pairs


def find_split(root: Path, split: str) -> Path | None:
    for suffix in (".tsv", ".csv"):
        if (root / f"{split}{suffix}").is_file():
            return root / f"{split}{suffix}"
    return None


def load_splits(root: str, label_column: str, val_fraction: float) -> tuple[Rows, Rows]:
    """Training and validation rows: train and val files, or `val_fraction` of one file's
    rows held out (the same rows every run)."""
    path = Path(root).expanduser()
    if path.is_dir():
        train_path = find_split(path, "train")
        if train_path is None:
            raise FileNotFoundError(f"data.root {path} has no train.tsv or train.csv")
        val_path = find_split(path, "val")
        if val_path is not None:
            return read_rows(train_path, label_column), read_rows(val_path, label_column)
        path = train_path
    rows = read_rows(path, label_column)
    train_index, val_index = hold_out(len(rows), val_fraction)
    return [rows[i] for i in train_index], [rows[i] for i in val_index]
