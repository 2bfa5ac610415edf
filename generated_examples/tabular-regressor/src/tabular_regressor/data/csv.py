"""csv: a table from a CSV file (ptgen dataset kind "csv").

`data.root` is either one CSV file (then `data.val_fraction` of the rows is held out,
the same rows every run) or a folder with train.csv and, optionally, val.csv and test.csv
(read only by `evaluate --split test`). The first row names the columns;
the number to predict is `data.target` (default: the last column).

Every other column gets a kind, decided on the training split alone:
  ignored      listed in `data.ignore` (ids, free text, columns that leak the target);
  constant     the same cell in every training row: it cannot help, so it is left out;
  categorical  listed in `data.categorical`, or holding any cell that is not a number:
               one-hot encoded over the categories seen at least twice in training (the
               `data.max_categories` most frequent); rarer and unseen ones are "unknown",
               all zeros;
  numeric      the rest, standardised with the training split's mean and std.
A cell listed in `data.na_values` is missing: a numeric one takes the training mean (0
once standardised), a categorical one is unknown, and every column with missing cells in
training also gets a 0/1 "missing" indicator. Rows whose target is missing are dropped
(the count is printed).
The target is standardised too (the model predicts standard deviations); the task turns
predictions and metrics back into the target's own units with state["target_mean"] and
state["target_std"].

The schema (each column's kind, categories and statistics) goes
into `bundle.state`, saved in checkpoints, so evaluation encodes rows exactly as training
did, and so does `predict` from the checkpoint alone (`raw_inputs`): `encode_features(
table, state)` turns any table with those columns into model inputs. With an empty
`data.root` the project's synthetic table is used instead. This file is yours: `ptgen
update` never touches it.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from ..config import ConfigError, option
from ..tasks import DataSpec
from . import DataBundle, TensorDictDataset, hold_out, note, read_text
from ._inputs import RawInputs, table_rows
from ._synthetic import SyntheticOptions, make_splits

MIN_CATEGORY_COUNT = 2  # a category seen once cannot be learned: it counts as unknown


@dataclass
class Options(SyntheticOptions):
    """[data] options of this dataset: set them with --set data.KEY=VALUE.

    The synthetic options are used while `root` is empty."""

    root: str = option(
        "", "a CSV file, or a folder with train.csv (and val.csv); empty: synthetic rows"
    )
    target: str = option("", "the column to predict (empty: the last column)")
    val_fraction: float = option(
        0.2, "share of the rows held out for validation when there is no val.csv", low=0.0, high=1.0
    )
    categorical: tuple[str, ...] = option(
        (), "columns read as categories even if they hold numbers"
    )
    ignore: tuple[str, ...] = option((), "columns left out: ids, free text, leaks of the target")
    na_values: tuple[str, ...] = option(
        ("", "NA", "N/A", "NaN", "nan", "null", "NULL", "?"), "cells that mean 'missing'"
    )
    max_categories: int = option(50, "one-hot columns per categorical column, at most", low=1)


@dataclass
class Table:
    """The rows of a CSV file as stripped strings, with the file line of each row."""

    path: Path
    header: list[str]
    rows: list[list[str]]
    lines: list[int]

    def column(self, name: str) -> list[str]:
        index = self.header.index(name)
        return [row[index] for row in self.rows]

    def subset(self, keep: list[int]) -> Table:
        return Table(
            self.path, self.header, [self.rows[i] for i in keep], [self.lines[i] for i in keep]
        )


def read_table(path: Path) -> Table:
    """A CSV file with a header row; every row must have as many cells as the header."""
    if not path.is_file():
        raise FileNotFoundError(f"CSV file {path} does not exist")
    reader = csv.reader(io.StringIO(read_text(path).removeprefix("\ufeff"), newline=""))
    try:  # (the prefix is the byte-order mark spreadsheet programs write)
        rows = [(reader.line_num, row) for row in reader if any(cell.strip() for cell in row)]
    except csv.Error as exc:
        raise ConfigError(f"{path}:{reader.line_num}: {exc}") from None
    if len(rows) < 2:
        raise ConfigError(f"{path} needs a header row and at least one data row")
    header = [name.strip() for name in rows[0][1]]
    twice = sorted({name for name in header if header.count(name) > 1})
    if twice:
        raise ConfigError(f"{path}: column names must be unique; repeated: {', '.join(twice)}")
    for line, row in rows[1:]:
        if len(row) != len(header):
            raise ConfigError(f"{path}:{line}: {len(row)} cells, the header has {len(header)}")
    cells = [[cell.strip() for cell in row] for _, row in rows[1:]]
    return Table(path, header, cells, [line for line, _ in rows[1:]])


def to_number(cell: str) -> float | None:
    """The cell as a finite number, or None."""
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def require_columns(table: Table, names: list[str], what: str) -> None:
    missing = [name for name in names if name not in table.header]
    if missing:
        raise ConfigError(
            f"{table.path}: no column {', '.join(map(repr, missing))} ({what}); "
            f"its columns are {', '.join(table.header)}"
        )


def drop_missing_targets(table: Table, target: str, na_values: set[str]) -> Table:
    """The rows whose target is present; the number dropped is printed."""
    require_columns(table, [target], "data.target")
    keep = [i for i, cell in enumerate(table.column(target)) if cell not in na_values]
    if len(keep) < len(table.rows):
        dropped = f"{len(table.rows) - len(keep)} of {len(table.rows)} rows dropped"
        note(f"{table.path.name}: {dropped}: their target ({target}) is missing")
    return table.subset(keep)


def load_splits(cfg: Options, target: str | None, na_values: set[str]) -> tuple[Table, Table, str]:
    """Train and val tables (val held out of train.csv when there is no val.csv), without
    the rows whose target is missing, and the target's name."""
    root = Path(cfg.root).expanduser()
    train = read_table(root / "train.csv" if root.is_dir() else root)
    target = target or cfg.target or train.header[-1]
    if root.is_dir() and (root / "val.csv").is_file():
        val = drop_missing_targets(read_table(root / "val.csv"), target, na_values)
        return drop_missing_targets(train, target, na_values), val, target
    train = drop_missing_targets(train, target, na_values)
    train_index, val_index = hold_out(len(train.rows), cfg.val_fraction)
    return train.subset(train_index), train.subset(val_index), target


def fit_column(cells: list[str], name: str, cfg: Options) -> dict[str, Any] | None:
    """The kind and statistics of one feature column from its training cells (None: constant)."""
    if len(set(cells)) < 2:
        return None
    na_values = set(cfg.na_values)
    present = [cell for cell in cells if cell not in na_values]
    numbers = [to_number(cell) for cell in present]
    column: dict[str, Any] = {"name": name, "missing": len(present) < len(cells)}
    if name in cfg.categorical or None in numbers:
        counts = Counter(present)
        ranked = sorted(counts, key=lambda c: (-counts[c], c))  # most frequent first
        kept = [c for c in ranked if counts[c] >= MIN_CATEGORY_COUNT][: cfg.max_categories]
        if len(counts) > max(len(cells) // 2, cfg.max_categories):
            note(
                f"column {name!r} has {len(counts)} distinct values in {len(cells)} rows; "
                "if it is an id or free text, add it to data.ignore"
            )
        return {**column, "kind": "categorical", "categories": sorted(kept)}
    values = torch.tensor(numbers, dtype=torch.float64)  # (N_present,)
    std = float(values.std()) if len(values) > 1 else 0.0
    return {
        **column,
        "kind": "numeric",
        "mean": float(values.mean()),
        "std": std if std > 0 else 1.0,
    }


def fit_schema(table: Table, target: str, cfg: Options) -> dict[str, Any]:
    """Every feature column's kind and statistics, fitted on the training table."""
    require_columns(table, [*cfg.categorical, *cfg.ignore], "data.categorical / data.ignore")
    if target in cfg.ignore:
        raise ConfigError(f"data.ignore lists the target column {target!r}")
    columns, left_out = [], [f"{name} (data.ignore)" for name in cfg.ignore]
    for name in table.header:
        if name == target or name in cfg.ignore:
            continue
        column = fit_column(table.column(name), name, cfg)
        if column is None:
            left_out.append(f"{name} (constant)")
        elif column["kind"] == "categorical" and not (column["categories"] or column["missing"]):
            left_out.append(f"{name} (no category seen twice)")
        else:
            columns.append(column)
    if not columns:
        raise ConfigError(f"{table.path}: no feature column varies in the training rows")
    kinds = Counter(column["kind"] for column in columns)
    found = f"{kinds['numeric']} numeric and {kinds['categorical']} categorical columns"
    left = f"; left out: {', '.join(left_out)}" if left_out else ""
    note(f"{table.path.name}: {len(table.rows)} training rows; {found}{left}")
    return {"target": target, "na_values": list(cfg.na_values), "columns": columns}


def encode_numeric(
    cells: list[str], column: dict[str, Any], table: Table, na: set[str]
) -> torch.Tensor:
    """(N, 1) standardised values, or (N, 2) with the missing indicator."""
    values, missing = [], []
    for cell, line in zip(cells, table.lines, strict=True):
        value = column["mean"] if cell in na else to_number(cell)
        if value is None:
            raise ConfigError(
                f"{table.path}:{line}: column {column['name']!r} is not a number ({cell!r}); "
                "it is numeric in the training split"
            )
        values.append(value)
        missing.append(float(cell in na))
    scaled = (torch.tensor(values, dtype=torch.float64) - column["mean"]) / column["std"]  # (N,)
    parts = [scaled.float()] + ([torch.tensor(missing)] if column["missing"] else [])
    return torch.stack(parts, dim=1)  # (N, 1 or 2)


def encode_categorical(cells: list[str], column: dict[str, Any], na: set[str]) -> torch.Tensor:
    """(N, K) one-hot over the K known categories (unknown: all zeros), plus the missing
    indicator when training had missing cells."""
    index = {category: i + 1 for i, category in enumerate(column["categories"])}  # 0: unknown
    codes = torch.tensor([index.get(cell, 0) for cell in cells])  # (N,)
    onehot = F.one_hot(codes, len(index) + 1)[:, 1:].float()  # (N, K)
    if not column["missing"]:
        return onehot
    missing = torch.tensor([float(cell in na) for cell in cells])  # (N,)
    return torch.cat([onehot, missing[:, None]], dim=1)  # (N, K + 1)


def encode_features(table: Table, schema: dict[str, Any]) -> torch.Tensor:
    """The model inputs (N, F) of a table's rows, encoded with a fitted schema."""
    require_columns(table, [column["name"] for column in schema["columns"]], "used in training")
    na = set(schema["na_values"])
    parts = []
    for column in schema["columns"]:
        cells = table.column(column["name"])
        if column["kind"] == "numeric":
            parts.append(encode_numeric(cells, column, table, na))
        else:
            parts.append(encode_categorical(cells, column, na))
    return torch.cat(parts, dim=1)  # (N, F)


def feature_names(schema: dict[str, Any]) -> list[str]:
    """The name of each input feature, in order: "age", "age (missing)", "island=Dream"."""
    names = []
    for column in schema["columns"]:
        if column["kind"] == "numeric":
            names.append(column["name"])
        else:
            names += [f"{column['name']}={category}" for category in column["categories"]]
        names += [f"{column['name']} (missing)"] if column["missing"] else []
    return names


def target_values(table: Table, target: str) -> torch.Tensor:
    """The target column as numbers (N,); a cell that is not one is an error."""
    values = []
    for cell, line in zip(table.column(target), table.lines, strict=True):
        value = to_number(cell)
        if value is None:
            raise ConfigError(
                f"{table.path}:{line}: the target ({target}) is not a number ({cell!r})"
            )
        values.append(value)
    return torch.tensor(values, dtype=torch.float64)  # (N,)


def fit_target(table: Table, target: str) -> dict[str, Any]:
    """The target's training mean and std (std 1 for a constant target)."""
    values = target_values(table, target)  # (N,)
    std = float(values.std()) if len(values) > 1 else 0.0
    return {"target_mean": float(values.mean()), "target_std": std if std > 0 else 1.0}


def encode_targets(table: Table, target: str, state: dict[str, Any]) -> torch.Tensor:
    """Standardised targets (N, 1)."""
    values = target_values(table, target)  # (N,)
    return ((values - state["target_mean"]) / state["target_std"]).float()[:, None]  # (N, 1)


def build(cfg: Options, seed: int, state: dict[str, Any] | None = None) -> DataBundle:
    if not cfg.root:
        return DataBundle(*make_splits(cfg, seed))
    na_values = state["na_values"] if state else cfg.na_values
    train, val, target = load_splits(cfg, state["target"] if state else None, set(na_values))
    if state is None:
        schema = fit_schema(train, target, cfg)
        state = {**schema, **fit_target(train, target), "features": feature_names(schema)}

    def dataset(table: Table) -> TensorDictDataset:
        return TensorDictDataset(
            encode_features(table, state), encode_targets(table, target, state)
        )

    spec = DataSpec(num_outputs=1, num_features=len(state["features"]))
    root = Path(cfg.root).expanduser()
    test_path = root / "test.csv"

    def load_test() -> TensorDictDataset:
        return dataset(drop_missing_targets(read_table(test_path), target, set(na_values)))

    test = load_test if root.is_dir() and test_path.is_file() else None
    return DataBundle(dataset(train), dataset(val), spec, state=state, load_test=test)


def raw_inputs(cfg: Options, state: dict[str, Any]) -> RawInputs | None:
    """Rows of CSV files (the feature columns by name; a target column is ignored), encoded
    exactly as in training; None for a model trained on the synthetic rows."""
    if not state:
        return None
    names = [column["name"] for column in state["columns"]]
    na = set(state["na_values"])
    numeric = [i for i, column in enumerate(state["columns"]) if column["kind"] == "numeric"]

    def prepare(cells: list[str]) -> dict[str, list[str]]:
        cells = [cell.strip() for cell in cells]  # `names`, in order
        for i in numeric:
            if cells[i] not in na and to_number(cells[i]) is None:
                raise ValueError(f"column {names[i]!r} is not a number: {cells[i]!r}")
        return {"cells": cells}

    def encode(rows: list[dict[str, list[str]]]) -> dict[str, torch.Tensor]:
        cells = [row["cells"] for row in rows]  # a batch at a time: rows stream fast
        table = Table(Path("predict"), names, cells, list(range(1, len(rows) + 1)))
        return {"inputs": encode_features(table, state)}  # (B, F)

    steps = {  # what encode_features does, for programs that feed an exported model
        "columns": state["columns"],  # in order: numeric (value - mean) / std, missing cells
        # taking the mean; categorical one-hot over `categories` (others all zero); then a
        # 0/1 missing indicator for each column whose "missing" is true
        "na_values": state["na_values"],
        "features": state["features"],  # the name of each model input, in order
        "target": state["target"],
    }
    return RawInputs(lambda sources: table_rows(sources, names), prepare, steps, encode)
