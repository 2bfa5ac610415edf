"""csv: a numeric table from CSV (ptgen dataset kind "csv").

`data.root` is either one CSV file (then `data.val_fraction` of the rows is held out,
the same rows every run) or a folder with train.csv and, optionally, val.csv and test.csv
(read only by `evaluate --split test`). The first row names the columns; the target is
`data.target` (default: the last column) and every other column is a numeric feature.
Features and target are standardised with the mean and std of the training split; those
statistics go into `bundle.state` (saved in checkpoints) so evaluation, and `predict`
from the checkpoint alone (`raw_inputs`), use the very same ones. The model therefore
predicts standardised values; the task turns them back into the target's units with
state["target_mean"] and state["target_std"], so the reported MAE, RMSE and predictions
are in the target's own units. With an empty `data.root` the project's synthetic table is
used instead. This file is yours: `ptgen update` never touches it.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..config import ConfigError, option
from ..tasks import DataSpec
from . import DataBundle, TensorDictDataset, hold_out, read_text
from ._inputs import RawInputs, table_rows
from ._synthetic import SyntheticOptions, make_splits


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


def read_table(path: Path) -> tuple[list[str], list[list[str]]]:
    """The header and the non-empty rows of a CSV file."""
    if not path.is_file():
        raise FileNotFoundError(f"CSV file {path} does not exist")
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    try:
        rows = [row for row in reader if any(cell.strip() for cell in row)]
    except csv.Error as exc:
        raise ConfigError(f"{path}:{reader.line_num}: {exc}") from None
    if len(rows) < 2:
        raise ConfigError(f"{path} needs a header row and at least one data row")
    return [name.strip() for name in rows[0]], rows[1:]


def to_tensor(
    path: Path, header: list[str], rows: list[list[str]], columns: list[str]
) -> torch.Tensor:
    """The named columns as a float tensor (N, len(columns)); a clear error for bad cells."""
    missing = [c for c in columns if c not in header]
    if missing:
        raise ConfigError(
            f"{path} has no column(s) {', '.join(missing)}; it has {', '.join(header)}"
        )
    index = [header.index(c) for c in columns]
    values = []
    for line, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise ConfigError(f"{path}:{line}: {len(row)} cells, the header has {len(header)}")
        try:
            values.append([float(row[i]) for i in index])
        except ValueError:
            bad = next(header[i] for i in index if not _is_number(row[i]))
            raise ConfigError(f"{path}:{line}: column {bad!r} is not a number") from None
    return torch.tensor(values, dtype=torch.float32)  # (N, len(columns))


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def load_splits(
    cfg: Options, columns: list[str] | None
) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """Train and val tables (N, F + 1) with the target last, and the column order used."""
    root = Path(cfg.root).expanduser()
    train_path = root / "train.csv" if root.is_dir() else root
    header, rows = read_table(train_path)
    if columns is None:
        target = cfg.target or header[-1]
        if target not in header:
            raise ConfigError(f"data.target {target!r} is not a column of {train_path}")
        columns = [c for c in header if c != target] + [target]
    train = to_tensor(train_path, header, rows, columns)  # (N, F + 1)
    if root.is_dir() and (root / "val.csv").is_file():
        val = to_tensor(root / "val.csv", *read_table(root / "val.csv"), columns)
        return train, val, columns
    train_index, val_index = hold_out(len(train), cfg.val_fraction)
    return train[train_index], train[val_index], columns


def build(cfg: Options, seed: int, state: dict[str, Any] | None = None) -> DataBundle:
    if not cfg.root:
        return DataBundle(*make_splits(cfg, seed))
    train, val, columns = load_splits(cfg, state["columns"] if state else None)
    if state is None:
        std = train.std(dim=0)  # (F + 1,)
        state = {
            "columns": columns,  # features in order, then the target
            "mean": train.mean(dim=0),  # (F + 1,)
            "std": torch.where(std > 0, std, torch.ones_like(std)),  # constant column: std 1
        }
    state = {**state}  # never modify the caller's (checkpoint's) dict
    mean, std = state["mean"], state["std"]
    state["target_mean"], state["target_std"] = float(mean[-1]), float(std[-1])

    def dataset(table: torch.Tensor) -> TensorDictDataset:
        scaled = (table - mean) / std  # (N, F + 1)
        return TensorDictDataset(scaled[:, :-1], scaled[:, -1:])  # (N, F), (N, 1)

    spec = DataSpec(num_outputs=1, num_features=len(columns) - 1)
    root = Path(cfg.root).expanduser()
    test_path = root / "test.csv"

    def load_test() -> TensorDictDataset:
        return dataset(to_tensor(test_path, *read_table(test_path), columns))

    test = load_test if root.is_dir() and test_path.is_file() else None
    return DataBundle(dataset(train), dataset(val), spec, state=state, load_test=test)


def raw_inputs(cfg: Options, state: dict[str, Any]) -> RawInputs | None:
    """Rows of CSV files (the feature columns by name; a target column is ignored),
    standardised exactly as in training; None for a model trained on the synthetic rows."""
    if not state:
        return None
    features = state["columns"][:-1]
    mean, std = state["mean"][:-1], state["std"][:-1]  # (F,)

    def prepare(cells: list[str]) -> dict[str, list[float]]:
        try:
            return {"inputs": [float(cell) for cell in cells]}  # `features`, in order
        except ValueError:
            bad = next(i for i, cell in enumerate(cells) if not _is_number(cell))
            raise ValueError(f"column {features[bad]!r} is not a number: {cells[bad]!r}") from None

    def standardise(rows: list[dict[str, list[float]]]) -> dict[str, torch.Tensor]:
        values = torch.tensor([row["inputs"] for row in rows], dtype=torch.float32)  # (B, F)
        return {"inputs": (values - mean) / std}  # a batch at a time: rows stream fast

    steps = {
        "features": features,  # CSV columns, in this order
        "normalize": {"mean": mean.tolist(), "std": std.tolist()},  # (value - mean) / std
        "target": state["columns"][-1],
    }
    return RawInputs(lambda sources: table_rows(sources, features), prepare, steps, standardise)
