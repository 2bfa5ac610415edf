"""Big tables: time to the first training step and peak memory of the csv dataset kind.

A generated tabular-classification project trains on numeric CSVs of 10 features and a
class (0.2M, 2M and 10M rows) and on a mixed file (a categorical column, missing cells),
read by the csv kind as it is now (pyarrow columns) and as it was at 68d2bda (lists of
strings; skipped at 10M rows, where it needs ~16 GB). Each measurement is a fresh
process: `build_run` (read, fit, encode, model, loaders) then one optimizer step; its peak
RSS is its VmHWM (`file_rss_mb`: the mapped code and libraries at the end, which vary with
the page cache by ~50 MB). The new kind runs `--repeats` times (the median is "new", every
run in "new_runs"). A second part times the bare read of the 2M-row file with
pyarrow and with polars (when installed), the choice of reader.

    python bench/bench_tables.py            # writes bench/bench_tables.json
    python bench/bench_tables.py --rows 200000 2000000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jinja2
import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ptgen.project import ProjectOptions, new_project  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OLD = "68d2bda"  # the csv kind before pyarrow
OLD_UP_TO = 2_000_000  # the old reader needs ~16 GB at 10M rows

CHILD = """
import sys, time
start = time.perf_counter()
from bench.config import load_config
from bench.engine import forward_backward, optimizer_step, to_device
from bench.runtime import DistInfo
from bench.train import build_run

config = load_config(overrides=[f"data.root={sys.argv[1]}", "data.name=" + sys.argv[2],
                                "train.batch_size=256", f"train.out_dir={sys.argv[3]}"])
run = build_run(config, DistInfo(), __import__("torch").device("cpu"))
run.sampler.set_epoch(0)
batch = to_device(next(iter(run.train_loader)), __import__("torch").device("cpu"))
forward_backward(run.train_model, batch, run.task, run.precision)
optimizer_step(run.optimizer, run.precision.scaler, 1.0)
seconds = time.perf_counter() - start
status = open("/proc/self/status").read()  # VmHWM: this process's own peak (ru_maxrss
peak = int(status.split("VmHWM:")[1].split()[0]) * 1024  # keeps the parent's across exec)
files = int(status.split("RssFile:")[1].split()[0]) * 1024  # mapped code: page-cache dependent
print("RESULT", seconds, peak, len(run.train_loader.dataset), files, flush=True)
"""


def numeric_csv(path: Path, rows: int) -> Path:
    """10 numeric features (6 decimals, as the issue's 187 MB file) and a class 0-2 that
    depends on them."""
    rng = np.random.default_rng(rows)
    chunks = []
    for start in range(0, rows, 1_000_000):  # a million rows at a time: bounded memory
        x = rng.standard_normal((min(1_000_000, rows - start), 10)).round(6)
        label = (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 1)
        columns = {f"f{i}": x[:, i] for i in range(10)} | {"label": label}
        chunks.append(pa.table(columns))
    with pa_csv.CSVWriter(path, chunks[0].schema) as writer:
        for chunk in chunks:
            writer.write_table(chunk)
    return path


def mixed_csv(path: Path, rows: int) -> Path:
    """8 numeric features with ~5% missing cells, a categorical column of 20 values, a class."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((rows, 8)).round(4)
    columns: dict[str, pa.Array] = {}
    for i in range(8):
        missing = rng.random(rows) < 0.05
        columns[f"f{i}"] = pa.array(np.where(missing, None, x[:, i]).tolist(), pa.float64())
    colours = np.array([f"c{i}" for i in range(20)])[rng.integers(0, 20, rows)]
    columns["colour"] = pa.array(colours.tolist())
    columns["label"] = pa.array(((x[:, 0] > 0) + (x[:, 1] > 0)).astype(np.int64))
    pa_csv.write_csv(pa.table(columns), path)
    return path


def projects(where: Path) -> Path:
    """A tabular project with the csv kind as `data.name=csv` and the old one as `csv_old`."""
    path = new_project(
        ProjectOptions(name="bench", task="tabular-classification", dataset="csv"),
        where,
        run_smoke=False,
        init_git=False,
    ).path
    source = subprocess.run(
        ["git", "show", f"{OLD}:templates/dataset/csv/dataset.py.jinja"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    old = jinja2.Template(source).render(name="csv_old", objective="classification")
    (path / "src" / "bench" / "data" / "csv_old.py").write_text(old)
    return path


def first_step(project: Path, data: Path, kind: str) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(project / "src"), PYTHONDONTWRITEBYTECODE="1")
    out = project / "runs" / kind
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(data), kind, str(out)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    line = next((x for x in result.stdout.splitlines() if x.startswith("RESULT")), None)
    if line is None:
        raise RuntimeError(result.stderr[-3000:])
    _, seconds, peak, train_rows, files = line.split()
    return {
        "seconds": round(float(seconds), 2),
        "peak_rss_mb": round(int(peak) / 2**20),
        "train_rows": int(train_rows),
        "file_rss_mb": round(int(files) / 2**20),
    }


def reader_times(data: Path) -> dict[str, float]:
    """The bare read of a CSV into columns: pyarrow, and polars when it is installed."""
    times = {}
    start = time.perf_counter()
    pa_csv.read_csv(data, parse_options=pa_csv.ParseOptions(newlines_in_values=True))
    times["pyarrow"] = round(time.perf_counter() - start, 2)
    try:
        import polars
    except ImportError:
        return times
    start = time.perf_counter()
    polars.read_csv(data)
    times["polars"] = round(time.perf_counter() - start, 2)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[200_000, 2_000_000, 10_000_000])
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "bench_tables.json")
    parser.add_argument("--repeats", type=int, default=3, help="runs of the new kind per file")
    args = parser.parse_args()
    results: dict[str, object] = {"cores": len(os.sched_getaffinity(0)), "files": []}
    with tempfile.TemporaryDirectory() as tmp:
        project = projects(Path(tmp) / "project")
        files = [(numeric_csv(Path(tmp) / f"numeric-{n}.csv", n), n) for n in args.rows]
        files.insert(1, (mixed_csv(Path(tmp) / "mixed.csv", 200_000), 200_000))
        for data, rows in files:
            row: dict[str, object] = {"file": data.name, "rows": rows}
            row["mb"] = round(data.stat().st_size / 2**20)
            runs = [first_step(project, data, "csv") for _ in range(args.repeats)]
            row["new"] = {key: sorted(r[key] for r in runs)[len(runs) // 2] for key in runs[0]}
            row["new_runs"] = runs
            if rows <= OLD_UP_TO:
                row["old"] = first_step(project, data, "csv_old")
            print(json.dumps(row), flush=True)
            results["files"].append(row)
        two_million = next((d for d, n in files if n == 2_000_000 and "numeric" in d.name), None)
        if two_million is not None:
            results["read_2m"] = reader_times(two_million)
            print(json.dumps(results["read_2m"]), flush=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
