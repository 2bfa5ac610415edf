"""Issue 36, round two, items 9 and 10 for the shard kinds: a read-only data folder trains
(the shard counts are kept in data.cache_dir, never beside the shards), and a
"table-shards" model predicts rows of Parquet and CSV files encoded as in training, its
export sidecar carrying that encoding. Real generated projects (one per module)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from helpers import generate, run_in_project, tree_snapshot

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pa_csv = pytest.importorskip("pyarrow.csv")

PKG = "shelves"

# The shards' sample counts as the data module sees them, twice (the second from the index).
COUNTS = """
import json, sys
from shelves.config import load_config
from shelves.data import build_data

config = load_config(None, [f"data.root={sys.argv[1]}"])
print(json.dumps([len(build_data(config.data, 0).train.shards) for _ in range(2)]))
"""


def write_shards(root: Path) -> Path:
    """train/ (2 shards) and val/ (1 shard) of id, colour (text, nulls), x (nulls), y."""
    rng = random.Random(0)
    for split, sizes in (("train", [40, 25]), ("val", [16])):
        (root / split).mkdir(parents=True)
        for shard, size in enumerate(sizes):
            x = [rng.gauss(0, 1) if i % 7 else None for i in range(size)]
            colour = [rng.choice(["red", "blue", None]) for _ in range(size)]
            y = [2 * (v or 0) + (c == "red") for v, c in zip(x, colour, strict=True)]
            table = {"id": list(range(size)), "colour": colour, "x": x, "y": y}
            pq.write_table(pa.table(table), root / split / f"part-{shard}.parquet")
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("shelves")
    options = {"task": "tabular-regression", "model": "mlp", "dataset": "table-shards"}
    path = generate(where, PKG, features=("export",), **options)
    write_shards(path / "shards")
    return path


def test_a_read_only_data_folder_trains_and_gains_no_file(
    project: Path, read_only, tmp_path: Path
) -> None:
    data = write_shards(tmp_path / "data")
    before = tree_snapshot(data)
    root = read_only(data)  # was: [Errno 30] Read-only file system: .../.shards.json.N.tmp
    result = run_in_project(project, "-c", COUNTS, str(root))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [2, 2] and "not cached" not in result.stderr
    assert tree_snapshot(data) == before  # nothing written beside the shards
    index = sorted((project / "runs" / "cache").glob(f"shards-{root.name}-train-*.json"))
    assert len(index) == 1, index
    counts = json.loads(index[0].read_text())
    assert {name: entry["samples"] for name, entry in counts.items()} == {
        "part-0.parquet": 40,
        "part-1.parquet": 25,
    }


@pytest.mark.slow
def test_table_shards_predict_and_export_encode_rows_as_training_did(
    project: Path, tmp_path: Path
) -> None:
    root, out = project / "shards", tmp_path / "run"
    sets = [f"data.root={root}", f"train.out_dir={out}", "train.max_steps=3"]
    sets += ["train.batch_size=8"]
    trained = run_in_project(project, "-m", PKG, "train", *[a for s in sets for a in ("--set", s)])
    assert trained.returncode == 0, trained.stderr
    checkpoint = str(out / "last.pt")
    evaluated = run_in_project(project, "-m", PKG, "evaluate", "--checkpoint", checkpoint, "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    mae = json.loads(evaluated.stdout.splitlines()[-1])["mae"]
    shard = root / "val" / "part-0.parquet"
    plain, bom = tmp_path / "val.csv", tmp_path / "bom.csv"
    pa_csv.write_csv(pq.read_table(shard), plain)  # nulls: empty cells
    bom.write_text("\ufeff" + plain.read_text(encoding="utf-8") + "\n\n", encoding="utf-8")
    inputs = [shard, plain, bom]
    result = run_in_project(
        project, "-m", PKG, "predict", "--checkpoint", checkpoint, *map(str, inputs)
    )  # was: "trained on synthetic data"
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    values = [[r["value"] for r in records if r["input"] == str(path)] for path in inputs]
    assert [len(found) for found in values] == [16, 16, 16]
    assert values[1] == pytest.approx(values[0]) and values[2] == pytest.approx(values[0])
    targets = pq.read_table(shard).column("y").to_pylist()
    errors = [abs(v - y) for v, y in zip(values[0], targets, strict=True)]
    assert sum(errors) / len(errors) == pytest.approx(mae, rel=1e-4)  # as evaluate encodes
    latin = tmp_path / "latin.csv"
    latin.write_bytes("id,colour,x\n1,caf\xe9,0.5\n".encode("latin-1"))
    refused = run_in_project(project, "-m", PKG, "predict", "--checkpoint", checkpoint, str(latin))
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"{latin}: not UTF-8 text (byte 0xe9)" in refused.stderr
    exported = run_in_project(
        project, "-m", PKG, "export", "--checkpoint", checkpoint, "--format", "pt2"
    )
    assert exported.returncode == 0, exported.stderr
    steps = json.loads((out / "last.pt2.json").read_text())["preprocessing"]  # was null
    assert [column["name"] for column in steps["columns"]] == ["id", "colour", "x"]
    assert steps["features"] == [
        "id",
        "colour=blue",
        "colour=red",
        "colour (missing)",
        "x",
        "x (missing)",
    ]
    assert steps["target"] == "y"
