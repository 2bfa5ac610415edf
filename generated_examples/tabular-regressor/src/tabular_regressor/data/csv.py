"""csv: a table from a CSV or Parquet file (ptgen dataset kind "csv").

`data.root` is either one .csv or .parquet file (then `data.val_fraction` of the rows is
held out, the same rows every run) or a folder with train.csv and, optionally, val.csv
and test.csv (read only by `evaluate --split test`), or the same as .parquet files. The
first row of a CSV file names the columns;
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
(the count is printed). In a Parquet file, null and NaN cells are missing too.

The target is standardised too (the model predicts standard deviations); the task turns
predictions and metrics back into the target's own units with state["target_mean"] and
state["target_std"].

The schema (each column's kind, categories and statistics) goes
into `bundle.state`, saved in checkpoints, so evaluation encodes rows exactly as training
did, and so does `predict` from the checkpoint alone (`raw_inputs`): `encode_features(
table, state)` turns any table with those columns into model inputs. With an empty
`data.root` the project's synthetic table is used instead.

This file is yours (`ptgen update` never touches it): it decides the columns, their kinds,
the targets and the options. The reading (pyarrow, a block at a time, one array per
column), the block-wise statistics and the encoding into one float32 (N, F) tensor are in
`data/_tables.py`, which `ptgen update` keeps up to date.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from ..config import ConfigError, option
from ..tasks import DataSpec
from . import DataBundle, TensorDictDataset, hold_out, note
from ._inputs import RawInputs
from ._synthetic import SyntheticOptions, make_splits
from ._tables import (
    Table,
    as_numbers,
    category_counts,
    encode_splits,
    feature_names,
    first_row,
    fit_numeric,
    is_missing,
    is_numbers,
    missing_cells,
    moments,
    one_thread,
    pooled,
    read_table,
    release_memory,
    require_columns,
    split_file,
    table_header,
    table_rows,
    to_number,
    to_tensor,
)

MIN_CATEGORY_COUNT = 2  # a category seen once cannot be learned: it counts as unknown


@dataclass
class Options(SyntheticOptions):
    """[data] options of this dataset: set them with --set data.KEY=VALUE.

    The synthetic options are used while `root` is empty."""

    root: str = option(
        "", "a .csv or .parquet file, or a folder with train.csv (and val.csv); empty: synthetic"
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


@one_thread()
def build(cfg: Options, seed: int, state: dict[str, Any] | None = None) -> DataBundle:
    if not cfg.root:
        return DataBundle(*make_splits(cfg, seed))
    train, val, state = load_splits(cfg, state)
    target, na_values = state["target"], state["na_values"]

    def dataset(table: Table) -> TensorDictDataset:
        return TensorDictDataset(
            encode_features(table, state), encode_targets(table, target, state)
        )

    spec = DataSpec(num_outputs=1, num_features=len(state["features"]))
    root = Path(cfg.root).expanduser()
    test_path = split_file(root, "test")

    @one_thread()
    def load_test() -> TensorDictDataset:
        test = read_table(test_path, na_values, text_columns(cfg, target, state), cfg.ignore)
        return dataset(drop_missing_targets(test, target, na_values))

    test = load_test if root.is_dir() and test_path.is_file() else None
    inputs = encode_splits([train, val], state)  # (N, F) each, the features' columns let go
    targets = [encode_targets(table, target, state) for table in (train, val)]
    del train, val
    release_memory()  # the other columns (the target's)
    splits = [TensorDictDataset(x, y) for x, y in zip(inputs, targets, strict=True)]
    return DataBundle(*splits, spec, state=state, load_test=test)


def load_splits(cfg: Options, state: dict[str, Any] | None) -> tuple[Table, Table, dict[str, Any]]:
    """Train and val tables (val held out of the training file when there is no val file),
    without the rows whose target is missing, and the state: fitted on train unless given."""
    root = Path(cfg.root).expanduser()
    na_values = state["na_values"] if state else cfg.na_values
    train_path = split_file(root, "train") if root.is_dir() else root
    target = state["target"] if state else cfg.target or (table_header(train_path) or [""])[-1]
    train = read_table(train_path, na_values, text_columns(cfg, target, state), cfg.ignore)
    train = drop_missing_targets(train, target, na_values)
    val_path = split_file(root, "val") if root.is_dir() else None
    if val_path is None or not val_path.is_file():
        train, val = (train.subset(rows) for rows in hold_out(len(train), cfg.val_fraction))
    state = state or fit_state(train, target, cfg)
    release_memory()  # the fitting's temporaries
    if val_path is not None and val_path.is_file():
        val = read_table(val_path, na_values, text_columns(cfg, target, state), cfg.ignore)
        val = drop_missing_targets(val, target, na_values)
    return train, val, state


def text_columns(cfg: Options, target: str, state: dict[str, Any] | None) -> list[str]:
    """The columns read as text: categories (and class names) keep the cells as written."""
    columns = state["columns"] if state else []
    categorical = [column["name"] for column in columns if column["kind"] == "categorical"]
    return [*cfg.categorical, *categorical]


def drop_missing_targets(table: Table, target: str, na_values: Iterable[str]) -> Table:
    """The rows whose target is present; the number dropped is printed."""
    require_columns(table, [target], "data.target")
    missing = missing_targets(table, target, na_values)  # (N,)
    if not missing.any():
        return table
    if missing.all():
        raise ConfigError(
            f"{table.path}: the target column {target!r} is missing in every row "
            f"(empty, or one of data.na_values); is data.target the right column?"
        )
    dropped = f"{int(missing.sum())} of {len(table)} rows dropped"
    note(f"{table.path.name}: {dropped}: their target ({target}) is missing")
    return table.subset(np.flatnonzero(~missing))


def fit_state(table: Table, target: str, cfg: Options) -> dict[str, Any]:
    """What is saved in checkpoints: the schema, the target's classes or statistics, the
    feature names."""
    schema = fit_schema(table, target, cfg)
    return {**schema, **fit_target(table, target), "features": feature_names(schema)}


def fit_schema(table: Table, target: str, cfg: Options) -> dict[str, Any]:
    """Every feature column's kind and statistics, fitted on the training table."""
    require_columns(table, [*cfg.categorical, *cfg.ignore], "data.categorical / data.ignore")
    if target in cfg.ignore:
        raise ConfigError(f"data.ignore lists the target column {target!r}")
    columns, left_out = [], [f"{name} (data.ignore)" for name in cfg.ignore]
    for name in table.header:
        if name == target or name in cfg.ignore:
            continue
        column = fit_column(table, name, cfg)
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
    note(f"{table.path.name}: {len(table)} training rows; {found}{left}")
    return {"target": target, "na_values": list(cfg.na_values), "columns": columns}


def fit_column(table: Table, name: str, cfg: Options) -> dict[str, Any] | None:
    """The kind and statistics of one feature column from its training cells (None: the
    same cell in every row, missing cells counting as one value). A column read as numbers
    is summed a block of rows at a time: no copy of the whole column."""
    if name not in cfg.categorical and is_numbers(table.columns[name]):
        return fit_numeric((part.values(name) for _, part in table.blocks()), name)
    column = table.column(name)
    values, bad = as_numbers(column, cfg.na_values)  # (N,) float64, missing: null
    if name in cfg.categorical or bad:
        missing = bool(is_missing(column, cfg.na_values).any())
        summary: dict[str, Any] = {"name": name, "missing": missing}
        counts = category_counts(column, cfg.na_values)
        if len(counts) + missing < 2:
            return None
        ranked = sorted(counts, key=lambda c: (-counts[c], c))  # most frequent first
        kept = [c for c in ranked if counts[c] >= MIN_CATEGORY_COUNT][: cfg.max_categories]
        if len(counts) > max(len(column) // 2, cfg.max_categories):
            note(
                f"column {name!r} has {len(counts)} distinct values in {len(column)} rows; "
                "if it is an id or free text, add it to data.ignore"
            )
        return {**summary, "kind": "categorical", "categories": sorted(kept)}
    return fit_numeric([to_tensor(pc.fill_null(values, math.nan))], name)


def encode_features(table: Table, schema: dict[str, Any]) -> torch.Tensor:
    """The model inputs (N, F) of a table's rows, encoded with a fitted schema."""
    return encode_splits([table], schema, release=False)[0]


def missing_targets(table: Table, target: str, na_values: Iterable[str]) -> np.ndarray:
    """(N,) True where the target is missing (empty, or one of `na_values`)."""
    return missing_cells(table, target, na_values)


def target_values(table: Table, target: str) -> torch.Tensor:
    """The target column as numbers (N,); a cell that is not one is an error."""
    if target in table.numbers:
        return table.values(target)  # (N,) float64
    cells = table.column(target)
    values, bad = as_numbers(cells, [])  # (N,) float64
    if bad:
        row, cell = first_row(cells, bad)
        raise ConfigError(f"{table.where(row)}: the target ({target}) is not a number ({cell!r})")
    return to_tensor(values)  # (N,)


def fit_target(table: Table, target: str) -> dict[str, Any]:
    """The target's training mean and std (std 1 for a constant target), a block at a time."""
    mean, std = pooled([moments(target_values(part, target)) for _, part in table.blocks()])
    return {"target_mean": mean, "target_std": std}


def encode_targets(table: Table, target: str, state: dict[str, Any]) -> torch.Tensor:
    """Standardised targets (N, 1)."""
    values = target_values(table, target)  # (N,)
    return ((values - state["target_mean"]) / state["target_std"]).float()[:, None]  # (N, 1)


def raw_inputs(cfg: Options, state: dict[str, Any]) -> RawInputs | None:
    """Rows of CSV or Parquet files (the feature columns by name; a target column is
    ignored), read and encoded exactly as in training; None for a model trained on the
    synthetic rows."""
    if not state:
        return None
    names = [column["name"] for column in state["columns"]]
    na = set(state["na_values"])
    numeric = [i for i, column in enumerate(state["columns"]) if column["kind"] == "numeric"]

    def prepare(cells: list[str | None]) -> dict[str, list[str | None]]:
        cells = [None if cell is None else cell.strip() for cell in cells]  # `names`, in order
        for i in numeric:
            if cells[i] is not None and cells[i] not in na and to_number(cells[i]) is None:
                raise ValueError(f"column {names[i]!r} is not a number: {cells[i]!r}")
        return {"cells": cells}

    def encode(rows: list[dict[str, list[str | None]]]) -> dict[str, torch.Tensor]:
        columns = zip(
            *(row["cells"] for row in rows), strict=True
        )  # a batch at a time: rows stream fast
        arrays = [pa.chunked_array([pa.array(cells, pa.string())]) for cells in columns]
        table = Table(Path("predict"), names, dict(zip(names, arrays, strict=True)))
        return {"inputs": encode_features(table, state)}  # (B, F)

    steps = {  # what encode_features does, for programs that feed an exported model
        "columns": state["columns"],  # in order: numeric (value - mean) / std, missing cells
        # taking the mean; categorical one-hot over `categories` (others all zero); then a
        # 0/1 missing indicator for each column whose "missing" is true
        "na_values": state["na_values"],
        "features": state["features"],  # the name of each model input, in order
        "target": state["target"],
    }
    na_values = list(state["na_values"])
    return RawInputs(lambda sources: table_rows(sources, names, na_values), prepare, steps, encode)
