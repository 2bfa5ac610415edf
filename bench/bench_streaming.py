"""Streamed shards vs in-memory text: set-up time and training-loader throughput.

    PYTHONPATH=src python bench/bench_streaming.py --repeats 5 --json bench/bench_streaming.json

Generates a sequence-classification project with ptgen's library API and adds two
dataset components over the same rows: `text_memory` (kind `text`: train.jsonl and
val.jsonl read, tokenised and held in memory as tensors) and `text_stream` (kind
`text-shards`: the same rows cut into 8 JSONL shards under train/ and val/, streamed by
data/_streams.py, tokenised in the loader, data.shuffle_buffer at its default).
The rows: four categories of Debian's `fortunes` (apt-get install fortunes), repeated
--copies times (default 10: 33,093 training texts), 10% held out for validation;
data.max_length 128, data.vocab_size 8000, batch size 32, one thread per process.

(a) Set-up: `data.build_data` (in memory: read and tokenise every row; streamed: count the
    shards' lines (first time: written to .shards.json) and one vocabulary pass), the
    first call, cold index.
(b) Loader: one epoch of the project's own training DataLoader (`data.build_loaders`,
    `set_epoch`, every batch collated), samples/s, with data.num_workers 0 and 1 (a
    streamed loader starts its worker each epoch; that is inside the time). The four
    contenders are interleaved, rotating order, --repeats times; medians, and the ratio
    streamed / in memory per worker count.
Prints a Markdown table and writes JSON (default bench/bench_streaming.json).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from _common import (
    clocks,
    generate_project,
    import_project,
    interleaved,
    machine,
    median,
    print_table,
    since,
    write_json,
)

from ptgen.components import add_component

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from real_data import fortunes_tsv  # noqa: E402  (a sibling script)

SHARDS = 8
SETTINGS = ["train.batch_size=32", "data.max_length=128", "data.vocab_size=8000"]


def write_data(workdir: Path, copies: int) -> tuple[Path, Path, int]:
    """The same rows as train.jsonl/val.jsonl (in memory) and as shards (streamed)."""
    tsv = fortunes_tsv(workdir / "fortunes.tsv")
    rows = [line.split("\t") for line in tsv.read_text(encoding="utf-8").splitlines()[1:]]
    rows = [json.dumps({"text": t, "label": y}) for t, y in rows] * copies
    random.Random(0).shuffle(rows)
    n_val = len(rows) // 10
    splits = {"val": rows[:n_val], "train": rows[n_val:]}
    memory, shards = workdir / "memory", workdir / "shards"
    memory.mkdir()
    for split, lines in splits.items():
        (memory / f"{split}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (shards / split).mkdir(parents=True)
        for k in range(SHARDS):
            part = "\n".join(lines[k::SHARDS]) + "\n"
            (shards / split / f"part-{k:02d}.jsonl").write_text(part, encoding="utf-8")
    return memory, shards, len(splits["train"])


def contender(mods: dict[str, Any], sets: list[str], workers: int) -> Any:
    """A function timing one training epoch of the configured loader: samples/s."""
    config = mods["config"].load_config(None, [*sets, f"data.num_workers={workers}"])
    bundle = mods["data"].build_data(config.data, 0)
    info = mods["runtime"].DistInfo()
    loader, _, sampler = mods["data"].build_loaders(bundle, config, info, torch.device("cpu"))

    def epoch() -> float:
        sampler.set_epoch(0)
        start, samples = clocks(), 0
        for batch in loader:
            samples += batch["targets"].shape[0]
        return samples / since(start)[0]

    return epoch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--json", type=Path, default=HERE / "bench_streaming.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        memory, shards, n_train = write_data(workdir, args.copies)
        project = generate_project(workdir / "p", task="sequence-classification")
        add_component(project, "dataset", "text_memory", "text")
        add_component(project, "dataset", "text_stream", "text-shards")
        mods = import_project(project)
        kinds = {
            "in memory": ["data.name=text_memory", f"data.root={memory}", *SETTINGS],
            "streamed": ["data.name=text_stream", f"data.root={shards}", *SETTINGS],
        }
        setup = {}
        for kind, sets in kinds.items():
            start = clocks()
            mods["data"].build_data(mods["config"].load_config(None, sets).data, 0)
            setup[kind] = since(start)[0]
        contenders = {
            (kind, workers): contender(mods, sets, workers)
            for workers in (0, 1)
            for kind, sets in kinds.items()
        }
        runs = interleaved({f"{k} {w}": fn for (k, w), fn in contenders.items()}, args.repeats)
    report(setup, runs, n_train, args)


def report(setup: dict[str, float], runs: dict[str, list[float]], n_train: int, args: Any) -> None:
    rows, results = [], {}
    for workers in (0, 1):
        memory, streamed = (median(runs[f"{kind} {workers}"]) for kind in ("in memory", "streamed"))
        results[f"workers_{workers}"] = {"in_memory": memory, "streamed": streamed}
        rows.append([workers, round(memory), round(streamed), streamed / memory])
    print(
        f"set-up (build_data): in memory {setup['in memory']:.2f} s, "
        f"streamed {setup['streamed']:.2f} s"
    )
    print_table(
        ["data.num_workers", "in memory samples/s", "streamed samples/s", "streamed / in memory"],
        rows,
    )
    payload = {
        "command": f"PYTHONPATH=src python bench/bench_streaming.py --repeats {args.repeats} "
        f"--json {args.json}",
        "train_samples": n_train,
        "setup_seconds": setup,
        "loader_samples_per_s": results,
        "raw": runs,
        "machine": machine(),
    }
    write_json(args.json, payload)


if __name__ == "__main__":
    main()
