"""How much of each batch is padding, with and without length bucketing.

    PYTHONPATH=src python bench/bench_padding.py [--batch-size 32] [--epochs 3]

Generates a sequence-classification project with ptgen's library API, adds a `text`
dataset, and walks the training batches exactly as `train` would (the project's
ResumableSampler, optionally wrapped in its BucketBatchSampler) on:
  - the project's synthetic sequences (uniform lengths 4..data.max_length), and
  - real text: four categories of Debian's `fortunes` (apt-get install fortunes),
    tokenised by the text kind, cut at data.max_length.
Padding fraction = padded positions / all positions of the padded (B, T) batches.
Prints a table and writes bench/bench_padding.json.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
from pathlib import Path

from ptgen.components import add_component
from ptgen.project import ProjectOptions, new_project

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from real_data import fortunes_tsv  # noqa: E402  (a sibling script)


def padding_fraction(data, bundle, batch_size: int, bucket: bool, epochs: int) -> tuple[float, int]:
    """(padded / total positions over all training batches of `epochs` epochs, batches)."""
    info = importlib.import_module(f"{data.__name__.rsplit('.', 1)[0]}.runtime").DistInfo()
    sampler = data.ResumableSampler(bundle.train, info, seed=42)
    batches = data.BucketBatchSampler(sampler, bundle.train_lengths, batch_size) if bucket else None
    real = total = count = 0
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        if batches is None:
            indices = list(sampler)
            groups = [indices[i : i + batch_size] for i in range(0, len(indices), batch_size)]
            groups = [g for g in groups if len(g) == batch_size]  # drop_last, as train does
        else:
            groups = list(batches)
            assert len(groups) == len(batches)
        for group in groups:
            lengths = [bundle.train_lengths[i] for i in group]
            real += sum(lengths)
            total += max(lengths) * len(lengths)
            count += 1
    return 1 - real / total, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        project = new_project(
            ProjectOptions(name="padbench", task="sequence-classification"), work, run_smoke=False
        ).path
        add_component(project, "dataset", "text", "text", variable_length=True)
        tsv = fortunes_tsv(work / "fortunes.tsv")
        sys.path.insert(0, str(project / "src"))
        config = importlib.import_module("padbench.config")
        data = importlib.import_module("padbench.data")
        sources = {
            "synthetic (lengths 4..64)": config.DataConfig(name="synthetic", num_samples=4096),
            "text: fortunes (max_length 128)": config.DataConfig(
                name="text", root=str(tsv), max_length=128, vocab_size=8000
            ),
        }
        rows = []
        for label, cfg in sources.items():
            bundle = data.build_data(cfg, seed=42)
            for bucket in (False, True):
                start = time.perf_counter()
                fraction, batches = padding_fraction(
                    data, bundle, args.batch_size, bucket, args.epochs
                )
                rows.append(
                    {
                        "data": label,
                        "bucket_by_length": bucket,
                        "padding_fraction": round(fraction, 4),
                        "batches": batches,
                        "samples": len(bundle.train),
                        "mean_length": round(sum(bundle.train_lengths) / len(bundle.train), 1),
                        "seconds": round(time.perf_counter() - start, 3),
                    }
                )
    print(f"batch size {args.batch_size}, {args.epochs} epochs, seed 42\n")
    print(
        f"{'data':34} {'bucketing':>9} {'padding':>8} {'batches':>8} {'samples':>8} {'mean len':>9}"
    )
    for r in rows:
        print(
            f"{r['data']:34} {'on' if r['bucket_by_length'] else 'off':>9} "
            f"{r['padding_fraction']:8.1%} {r['batches']:8d} {r['samples']:8d} "
            f"{r['mean_length']:9.1f}"
        )
    out = HERE / "bench_padding.json"
    out.write_text(
        json.dumps({"batch_size": args.batch_size, "epochs": args.epochs, "rows": rows}, indent=2)
        + "\n"
    )
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
