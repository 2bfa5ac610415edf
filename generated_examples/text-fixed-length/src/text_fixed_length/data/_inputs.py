"""Raw inputs for `predict` and `export`: what a dataset kind provides, and the readers.

A dataset kind that can read raw inputs defines `raw_inputs(cfg, state) -> RawInputs`: how
texts become model inputs, from the options and the state saved in a checkpoint
alone (the training data need not exist). `predict` streams the raw inputs
through `read` and `prepare`, batches them with `collate_fn` and runs the model; `export`
writes `preprocessing` into the sidecar of an exported model, for programs that feed it
without this project.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import torch


class Raw(NamedTuple):
    """One raw input, or why it cannot be read (then `value` is None)."""

    source: str  # the file (or argument) it came from
    row: int | None  # its row in that file, counted from 1; None for a whole file
    value: Any  # what `RawInputs.prepare` takes
    error: str | None = None


@dataclass
class RawInputs:
    """How a dataset kind turns raw inputs into model inputs (see the module docstring)."""

    read: Callable[[list[str]], Iterator[Raw]]  # predict's INPUT arguments -> raw inputs, lazily
    # one raw value -> one sample (no targets), checked and converted as the dataset's
    # items are; raises ValueError or OSError with the reason when it cannot be used
    prepare: Callable[[Any], dict[str, Any]]
    preprocessing: dict[str, Any]  # the steps, as JSON, for an export's sidecar
    # samples -> the model's inputs (None: stack them); it may finish preparing a batch at
    # a time what is cheaper so (the csv kind standardises whole batches)
    collate_fn: Callable[[list[dict[str, Any]]], dict[str, torch.Tensor]] | None = None


def texts(sources: list[str]) -> Iterator[Raw]:
    """Texts from .csv/.tsv files with a header (the `text` column, or the first one),
    .jsonl files (the "text" key of each line's object), and any other file, one text per
    line. A file that cannot be read is one error; so is each bad line."""
    for source in sources:
        path = Path(source).expanduser()
        if not path.is_file():
            yield Raw(source, None, None, "no such file")
            continue
        suffix = path.suffix.lower()
        reader = {".csv": csv_texts, ".tsv": csv_texts, ".jsonl": jsonl_texts}.get(suffix)
        try:
            with open(path, encoding="utf-8", newline="") as handle:
                yield from (reader or line_texts)(source, handle)
        except UnicodeDecodeError as exc:
            yield Raw(source, None, None, f"not UTF-8 text ({exc.reason}); the rest is skipped")
        except (OSError, csv.Error) as exc:
            yield Raw(source, None, None, str(exc))


def line_texts(source: str, handle: Any) -> Iterator[Raw]:
    for row, line in enumerate(handle, start=1):
        yield Raw(source, row, line.rstrip("\r\n"))


def csv_texts(source: str, handle: Any) -> Iterator[Raw]:
    """TSV is read without quote processing (one line, one row), as in training."""
    tsv = source.lower().endswith(".tsv")
    dialect = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if tsv else {"delimiter": ","}
    rows = csv.reader(handle, **dialect)
    header = [name.strip() for name in next(rows, [])]
    if not header:
        yield Raw(source, None, None, "empty file: a header row is needed")
        return
    column = header.index("text") if "text" in header else 0
    for row, cells in enumerate(rows, start=1):
        if len(cells) != len(header):
            yield Raw(source, row, None, f"{len(cells)} fields, the header has {len(header)}")
        else:
            yield Raw(source, row, cells[column])


def jsonl_texts(source: str, handle: Any) -> Iterator[Raw]:
    for row, line in enumerate(handle, start=1):
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield Raw(source, row, None, f"not JSON ({exc.msg})")
            continue
        text = value.get("text") if isinstance(value, dict) else None
        if isinstance(text, str):
            yield Raw(source, row, text)
        else:
            yield Raw(source, row, None, 'not an object with a "text" string')
