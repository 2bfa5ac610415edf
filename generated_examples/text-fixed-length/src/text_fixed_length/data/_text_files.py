"""Labelled text files, read by the "text" and "hf-text" dataset kinds, and the word
tokeniser of the "text" and "text-shards" kinds.

`root` is one .tsv, .csv or .jsonl file (then `val_fraction` of the rows is held out, the
same rows every run) or a folder with train.tsv|csv|jsonl and, optionally,
val.tsv|csv|jsonl and test.tsv|csv|jsonl. In a TSV or CSV file the first row names the
columns; in a JSONL file every line is one JSON object and the first one's keys name the
fields. The label is `label_column` (default: the last column), the text is "text"
(default: the first other column). TSV text is taken as it is (a quote is a character,
so one line is always one row); CSV follows the usual quoting. A line that is not UTF-8,
not valid JSON or short of fields is an error naming the file and line.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import torch

from ..config import ConfigError
from . import hold_out, read_text
from ._inputs import RawInputs, texts
from ._sequences import pad_collate

Rows = list[tuple[str, str]]  # (text, label) pairs
UNK_INDEX = 1
SPECIALS = ["<pad>", "<unk>"]  # 0 is _sequences.PAD_INDEX, 1 is UNK_INDEX
TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """'Hello, World!' -> ['hello', ',', 'world', '!']"""
    return TOKEN.findall(text.lower())


def build_vocab(texts: Iterable[str], max_size: int) -> list[str]:
    """Specials, then tokens by falling frequency (ties alphabetically): index = position.
    `texts` may be a generator: only the token counts are held."""
    counts = Counter(token for text in texts for token in tokenize(text))
    ranked = sorted(counts, key=lambda token: (-counts[token], token))
    return SPECIALS + ranked[: max(max_size - len(SPECIALS), 0)]


def encode(text: str, index: dict[str, int], max_length: int) -> torch.Tensor:
    """Token ids (T,), 1 <= T <= max_length; an empty text becomes one unknown token."""
    ids = [index.get(token, UNK_INDEX) for token in tokenize(text)[:max_length]]
    return torch.tensor(ids or [UNK_INDEX], dtype=torch.long)


def read_delimited(path: Path) -> list[tuple[int, list[str]]]:
    """(line, cells) of every row of a .tsv (tab-separated) or .csv file, header first.

    TSV text is taken as it is: a quote is a character, not a delimiter (so one line is
    always one row); CSV follows the usual quoting."""
    csv.field_size_limit(2**31 - 1)  # long documents are fine: max_length cuts them
    tsv = path.suffix.lower() in (".tsv", ".tab", ".txt")
    dialect = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if tsv else {"delimiter": ","}
    reader = csv.reader(io.StringIO(read_text(path), newline=""), **dialect)
    try:
        return [(reader.line_num, row) for row in reader if row]
    except csv.Error as exc:
        raise ConfigError(f"{path}:{reader.line_num}: {exc}") from None


def read_jsonl(path: Path) -> list[tuple[int, list[str]]]:
    """(line, cells) of a .jsonl file, one JSON object per line; the first object's keys
    come first, as the header. A missing field is an empty cell."""
    records = []
    # split("\n"), not splitlines(): a JSON string may hold U+2028 and other line breaks
    for line, raw in enumerate(read_text(path).split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{line}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise ConfigError(f"{path}:{line}: not a JSON object")
        records.append((line, record))
    if not records:
        return []
    header = list(records[0][1])
    return [(0, header)] + [(line, [as_cell(r.get(key)) for key in header]) for line, r in records]


def as_cell(value: object) -> str:
    """A JSON value as a cell: strings as they are, null as empty, others as JSON (1, true)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def read_rows(path: Path, label_column: str) -> Rows:
    """(text, label) pairs from a .tsv, .csv or .jsonl file."""
    if not path.is_file():
        raise FileNotFoundError(f"text file {path} does not exist")
    jsonl = path.suffix.lower() in (".jsonl", ".ndjson")
    rows = read_jsonl(path) if jsonl else read_delimited(path)
    if len(rows) < 2:
        needs = "at least one JSON object" if jsonl else "a header row and at least one data row"
        raise ConfigError(f"{path} needs {needs}")
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
    for suffix in (".tsv", ".csv", ".jsonl"):
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
            raise FileNotFoundError(f"data.root {path} has no train.tsv, train.csv or train.jsonl")
        val_path = find_split(path, "val")
        if val_path is not None:
            return read_rows(train_path, label_column), read_rows(val_path, label_column)
        path = train_path
    rows = read_rows(path, label_column)
    train_index, val_index = hold_out(len(rows), val_fraction)
    return [rows[i] for i in train_index], [rows[i] for i in val_index]


def word_inputs(vocab: list[str], max_length: int, fixed_length: bool) -> RawInputs:
    """Raw texts for `predict` (lines of a file, or a CSV/TSV/JSONL column), encoded with
    `vocab` exactly as the word-token kinds encode their samples; `fixed_length`: padded
    to `max_length` (else to the batch's longest text)."""
    index = {token: i for i, token in enumerate(vocab)}

    def prepare(text: str) -> dict[str, torch.Tensor]:
        return {"inputs": encode(text, index, max_length)}  # (T,)

    steps = {
        "tokenize": {"lowercase": True, "pattern": TOKEN.pattern},  # re.findall(pattern, text)
        "vocab": vocab,  # token -> its index here; others -> unknown_index
        "unknown_index": UNK_INDEX,
        "empty_text": [UNK_INDEX],  # a text without tokens becomes one unknown token
        "max_length": max_length,  # longer texts are cut
        "pad": {"index": 0, "to": max_length if fixed_length else "the longest text of the batch"},
        "lengths": "tokens before padding",
        "padding_mask": "True where padded",
    }
    collate = functools.partial(pad_collate, length=max_length) if fixed_length else pad_collate
    return RawInputs(texts, prepare, steps, collate)
