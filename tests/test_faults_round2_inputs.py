"""Issue 36, round two, items 9, 11, 12 and 13: predict reads tables with training's reader
(Parquet, a BOM, large cells), names files whose name is not UTF-8, honours the images'
pixel limit; tables training cannot use are refused in one line saying why. Real generated
projects, trained a few steps; one project per kind (module fixtures).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import generate, run_in_project, train_errors
from PIL import Image
from test_component_kinds import write_images, write_table

TABLE_PKG, IMAGE_PKG = "tabby", "snappy"
pytestmark = pytest.mark.slow  # the fixtures train (a few steps each)


@pytest.fixture(scope="module")
def table_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A csv-kind regression project trained a few steps: (project, checkpoint, folder)."""
    where = tmp_path_factory.mktemp("table")
    project = generate(where, TABLE_PKG, task="tabular-regression", model="mlp", dataset="csv")
    data = write_table(where / "table.csv")
    sets = [f"data.root={data}", "train.max_steps=3", "train.batch_size=16"]
    result = run_in_project(
        project, "-m", TABLE_PKG, "train", *(arg for s in sets for arg in ("--set", s))
    )
    assert result.returncode == 0, result.stderr
    return project, project / "runs" / "default" / "last.pt", where


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        return list(csv.DictReader(handle))


def test_csv_predict_reads_parquet_a_bom_and_large_cells_as_training_does(table_run) -> None:
    project, checkpoint, where = table_run
    rows = read_csv_rows(where / "table.csv")[:12]
    header = list(rows[0])
    lines = [",".join(header)] + [",".join(row[name] for name in header) for row in rows]
    plain, bom, big = where / "plain.csv", where / "bom.csv", where / "big.csv"
    plain.write_text("\n".join(lines) + "\n", encoding="utf-8")
    bom.write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")
    notes = ["x" * (200 << 10)] + ["short"] * (len(rows) - 1)  # a 200 KiB cell, then more rows
    big.write_text(
        "\n".join(
            [lines[0] + ",notes"]
            + [f"{line},{n}" for line, n in zip(lines[1:], notes, strict=True)]
        )
        + "\n",
        encoding="utf-8",
    )
    number = {"a": int, "b": float, "c": float, "y": float}  # NA cells: null
    columns = {
        name: [None if row[name] == "NA" else number.get(name, str)(row[name]) for row in rows]
        for name in header
    }
    columns["meta"] = [{"k": i, "v": [i, i]} for i in range(len(rows))]  # not a feature
    parquet = where / "table.parquet"
    pq.write_table(pa.table(columns), parquet)
    inputs = [plain, bom, big, parquet]
    result = run_in_project(
        project, "-m", TABLE_PKG, "predict", "--checkpoint", str(checkpoint), *map(str, inputs)
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    by_file = [[r for r in records if r["input"] == str(path)] for path in inputs]
    assert [len(found) for found in by_file] == [len(rows)] * len(inputs), result.stderr
    expected = [r["value"] for r in by_file[0]]
    for path, found in zip(inputs[1:], by_file[1:], strict=True):
        assert [r["row"] for r in found] == list(range(1, len(rows) + 1)), path
        assert [r["value"] for r in found] == pytest.approx(expected), path


def test_tables_training_cannot_use_are_refused_saying_why(table_run, tmp_path: Path) -> None:
    project, _, where = table_run
    rows = read_csv_rows(where / "table.csv")
    nested = tmp_path / "nested.parquet"
    columns = {name: [row[name] for row in rows] for name in rows[0]}
    columns["tags"] = [["a", "b"][: i % 3] for i in range(len(rows))]  # a list column
    pq.write_table(pa.table(columns), nested)
    empty_target = tmp_path / "no_target.csv"
    empty_target.write_text(
        "a,b,y\n" + "".join(f"{i},{i % 3},NA\n" for i in range(40)), encoding="utf-8"
    )
    semicolons = tmp_path / "semicolons.csv"
    semicolons.write_text(
        "a;b;y\n" + "".join(f"{i};{i % 3};{i / 2}\n" for i in range(40)), encoding="utf-8"
    )
    said = train_errors(
        project,
        TABLE_PKG,
        tmp_path / "run",
        f"data.root={nested}",
        f"data.root={empty_target}",
        f"data.root={semicolons}",
    )
    assert "'tags'" in said[0] and "data.ignore=tags" in said[0], said[0]
    assert "target column 'y' is missing in every row" in said[1], said[1]
    assert "separated by semicolons" in said[2], said[2]
    assert not (tmp_path / "run" / "last.pt").exists()


@pytest.fixture(scope="module")
def image_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """An image-folder project trained a few steps with data.max_image_pixels=1000 (its
    images have at most 168): (project, checkpoint, folder)."""
    where = tmp_path_factory.mktemp("images")
    project = generate(
        where, IMAGE_PKG, task="image-classification", model="cnn", dataset="image-folder"
    )
    root = write_images(where / "images")
    sets = [f"data.root={root}", "data.max_image_pixels=1000", "data.image_size=16"]
    sets += ["data.num_workers=0"]
    sets += ["data.cache=none", "train.max_steps=2", "train.batch_size=8"]
    result = run_in_project(
        project, "-m", IMAGE_PKG, "train", *(arg for s in sets for arg in ("--set", s))
    )
    assert result.returncode == 0, result.stderr
    return project, project / "runs" / "default" / "last.pt", where


def test_image_predict_refuses_an_image_over_max_image_pixels_as_training_does(
    image_run, tmp_path: Path
) -> None:
    project, checkpoint, _ = image_run
    folder = tmp_path / "new"
    folder.mkdir()
    Image.new("RGB", (12, 12), (200, 40, 40)).save(folder / "a.png")
    Image.new("RGB", (40, 40), (200, 40, 40)).save(folder / "big.png")  # 1600 > 1000 pixels
    Image.new("RGB", (12, 12), (40, 40, 200)).save(folder / "c.png")
    out = tmp_path / "out.jsonl"
    result = run_in_project(
        project, "-m", IMAGE_PKG, "predict", "--checkpoint", str(checkpoint), str(folder),
        "--output", str(out),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert str(folder / "big.png") in result.stderr and "max_image_pixels" in result.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["input"] for r in records] == [str(folder / "a.png"), str(folder / "c.png")]


def test_predict_csv_names_a_file_whose_name_is_not_utf8(image_run, tmp_path: Path) -> None:
    project, checkpoint, _ = image_run
    folder = tmp_path / "new"
    folder.mkdir()
    odd = Path(os.fsdecode(bytes(folder) + b"/caf\xe9.png"))  # Latin-1 name: not UTF-8
    Image.new("RGB", (12, 12), (200, 40, 40)).save(odd)
    Image.new("RGB", (12, 12), (40, 40, 200)).save(folder / "z.png")
    for fmt in ("csv", "jsonl"):
        out = tmp_path / f"out.{fmt}"
        result = run_in_project(
            project, "-m", IMAGE_PKG, "predict", "--checkpoint", str(checkpoint), str(folder),
            "--format", fmt, "--output", str(out),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        text = out.read_text(encoding="utf-8")  # valid UTF-8
        if fmt == "csv":
            names = [row["input"] for row in csv.DictReader(text.splitlines())]
        else:
            names = [json.loads(line)["input"] for line in text.splitlines()]
        assert names == [f"{folder}/caf\\xe9.png", str(folder / "z.png")], fmt
