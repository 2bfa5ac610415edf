"""Issue 21, big tables: the csv dataset kind reads with pyarrow (CSV and Parquet).

The statistics saved in checkpoints are exactly those of the reader it replaced (lists of
strings, Python's float(), torch float64 mean/std); Parquet folders train and evaluate;
a ragged row is still one line naming the file and line, exit 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import generate, run_in_project

PKG = "tables"

# What the reader at 68d2bda fitted on MIXED (train.csv) below, computed once with it:
# mean/std are torch float64 over the present values, in row order.
OLD_STATE = {
    "target": "y",
    "columns": [
        {"name": "a", "missing": True, "kind": "numeric", "mean": 3.12, "std": 2.4993999279827146},
        {
            "name": "b",
            "missing": False,
            "kind": "numeric",
            "mean": 0.2833333333333334,
            "std": 0.22286019533929036,
        },
        {"name": "colour", "missing": True, "kind": "categorical", "categories": ["blue", "red"]},
        {"name": "zip", "missing": False, "kind": "categorical", "categories": ["01000"]},
    ],
    "classes": ["2", "9", "10"],
}

MIXED = [
    "a,b,colour,zip,const,y",
    "1.5,0.1, red ,01000,k,10",
    "2,0.2,blue,01000,k,9",
    "NA,0.3,red,02000,k,2",
    "7.1,1e-1,blue,01000,k,10",
    "1_000e-3,0.7,,03000,k,9",
    "3.9,0.4,green,01000,k,",
    "4,.3,red,01000,k,2",
]

CHECKS = """
import math
from pathlib import Path

import numpy as np
import torch

from tables.data import build_data, hold_out
from tables.data._tables import BLOCK_ROWS
from tables.data.csv import Options

OLD_STATE = {old!r}


def test_statistics_equal_the_old_readers(tmp_path: Path) -> None:
    (tmp_path / "train.csv").write_text({mixed!r})
    (tmp_path / "val.csv").write_text("a,b,colour,zip,const,y\\n2,0.5,red,01000,k,9\\n")
    options = Options(name="csv", root=str(tmp_path), categorical=("zip",))
    state = build_data(options, seed=0).state
    assert {{key: state[key] for key in OLD_STATE}} == OLD_STATE  # floats compared exactly
    assert state["features"] == [
        "a", "a (missing)", "b", "colour=blue", "colour=red", "colour (missing)", "zip=01000"
    ]


def test_statistics_summed_a_block_at_a_time_are_torchs_over_the_column(tmp_path: Path) -> None:
    # More rows than three blocks, some missing, held out in a shuffled order: the pooled
    # mean and std equal torch's over the whole training column to rounding.
    rows = 3 * BLOCK_ROWS + 123
    x = np.random.default_rng(0).normal(5.0, 3.0, rows).round(6)
    x[::11] = np.nan
    cells = ["" if np.isnan(v) else repr(float(v)) for v in x]
    lines = ["x,y", *(f"{{cell}},{{i % 3}}" for i, cell in enumerate(cells))]
    (tmp_path / "t.csv").write_text("\\n".join(lines) + "\\n")
    bundle = build_data(Options(name="csv", root=str(tmp_path / "t.csv")), seed=0)
    train, _ = hold_out(rows, Options.val_fraction)
    values = torch.from_numpy(x)[train]
    values = values[~values.isnan()]
    (column,) = bundle.state["columns"]
    assert column["missing"] and len(bundle.train) == len(train)
    assert math.isclose(column["mean"], float(values.mean()), rel_tol=1e-13)
    assert math.isclose(column["std"], float(values.std()), rel_tol=1e-13)


def test_later_blocks_widen_columns_and_outgrow_the_first_blocks_guess(tmp_path: Path) -> None:
    # Long rows first (more than one 512 KB block), then short ones: the columns' memory,
    # sized from the first block, must grow. Past the first block an integer column gets
    # a decimal (read again as floats) and another words (read again as text: a
    # category). Every row is read, each value as written.
    long, short = 24_000, 150_000
    i = [str(k) for k in range(long)] + [str(k % 10) for k in range(short)]
    i[long + 90_000] = "2.5"
    w = [str(k % 7) for k in range(long + short)]
    w[long + 100_000 :: 1000] = ["seven"] * len(w[long + 100_000 :: 1000])
    pad = [str(10**11 + k) for k in range(long)] + ["1"] * short
    rows_of = enumerate(zip(i, w, pad))
    lines = ["i,w,pad,y", *(f"{{a}},{{b}},{{c}},{{k % 3}}" for k, (a, b, c) in rows_of)]
    (tmp_path / "t.csv").write_text("\\n".join(lines) + "\\n")
    bundle = build_data(Options(name="csv", root=str(tmp_path / "t.csv")), seed=0)
    rows = long + short
    assert len(bundle.train) + len(bundle.val) == rows
    kinds = {{column["name"]: column["kind"] for column in bundle.state["columns"]}}
    assert kinds == {{"i": "numeric", "w": "categorical", "pad": "numeric"}}
    train, _ = hold_out(rows, Options.val_fraction)
    for name, cells in (("i", i), ("pad", pad)):
        values = torch.tensor([float(cell) for cell in cells], dtype=torch.float64)[train]
        (column,) = [c for c in bundle.state["columns"] if c["name"] == name]
        assert math.isclose(column["mean"], float(values.mean()), rel_tol=1e-12)
        assert math.isclose(column["std"], float(values.std()), rel_tol=1e-9)  # pooled blocks


def test_reading_a_table_does_not_import_pandas(tmp_path: Path) -> None:
    # pyarrow's to_numpy and pa.array import pandas where it is installed (~0.25 s); the
    # numbers and the classes are read from Arrow's buffers instead.
    import subprocess
    import sys

    cells = (f"{{k * 0.5}},{{'' if k % 9 == 0 else k}},{{'xyz'[k % 3]}}" for k in range(5000))
    lines = ["a,b,y", *cells]
    (tmp_path / "t.csv").write_text("\\n".join(lines) + "\\n")
    code = (
        "import sys; from tables.data import build_data; from tables.data.csv import Options; "
        "build_data(Options(name='csv', root=sys.argv[1]), seed=0); print('pandas' in sys.modules)"
    )
    command = [sys.executable, "-c", code, str(tmp_path / "t.csv")]
    found = subprocess.run(command, capture_output=True, text=True)
    assert found.stdout.strip() == "False", found.stderr[-2000:]
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(
        tmp_path_factory.mktemp("tables"), name=PKG, task="tabular-classification", dataset="csv"
    )


def test_fitted_state_is_exactly_the_old_readers(project: Path) -> None:
    code = CHECKS.format(old=OLD_STATE, mixed="\n".join(MIXED) + "\n")
    (project / "tests" / "test_scale_checks.py").write_text(code.lstrip())
    try:
        result = run_in_project(
            project, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_scale_checks.py"
        )
    finally:
        (project / "tests" / "test_scale_checks.py").unlink()
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


@pytest.mark.slow
def test_parquet_folder_trains_and_evaluates(project: Path, tmp_path: Path) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    for split, rows in (("train", 256), ("val", 64), ("test", 64)):
        x = rng.standard_normal((rows, 3))
        x[::7, 0] = np.nan  # NaN: a missing cell
        label = np.where(x[:, 1] > 0, "up", "down")
        table = pa.table({"x0": x[:, 0], "x1": x[:, 1], "x2": x[:, 2], "label": label})
        pq.write_table(table, tmp_path / f"{split}.parquet")
    out = tmp_path / "run"
    sets = [f"data.root={tmp_path}", f"train.out_dir={out}", "train.epochs=2"]
    args = [a for s in sets for a in ("--set", s)]
    trained = run_in_project(project, "-m", PKG, "train", *args)
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert "256 training rows" in trained.stderr
    evaluated = run_in_project(
        project, "-m", PKG, "evaluate", "--checkpoint", str(out / "best.pt"), "--split", "test"
    )
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]


def test_ragged_row_is_one_line_naming_file_and_line(project: Path, tmp_path: Path) -> None:
    lines = ["x,y", *[f"{i},{i % 2}" for i in range(40)], "", "3,1,9", "4,0"]
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "run"
    result = run_in_project(
        project,
        "-m",
        PKG,
        "train",
        "--set",
        f"data.root={tmp_path / 't.csv'}",
        "--set",
        f"train.out_dir={out}",
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: {tmp_path / 't.csv'}:43: 3 cells, the header has 2"
    ]
    assert not out.exists() or not list(out.glob("*.pt"))
