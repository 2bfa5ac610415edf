"""Transfer with `model.init_from`: does starting from another real dataset's weights help?

    PYTHONPATH=src python bench/bench_transfer.py [--out-dir /tmp/ptgen-transfer] [--json PATH]

Data: scikit-learn's bundled 8x8 digits as PNG files (bench/real_data.py writes them;
every 5th image of a digit is validation). Source task: digits 0-5, every training image.
Target task: digits 6-9 with only `--per-class` training images each (default 25), and
every validation image of 6-9. One image-classification project with the default `cnn`
and the `image-folder` kind, at the defaults a user gets (train.epochs 10, lr 0.001,
batch 32, ...) except data.image_size=16 (the digits are 8x8; 32 only costs time).

Contenders, side by side over the same seeds: from scratch; `model.init_from` the source
run's last.pt (the 6-class head re-initialised for 4 classes); the same with
`model.freeze=features` (only the head trains). Prints a table and writes JSON.
Needs scikit-learn (pip).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

from real_data import digits_folder, generate, train_and_evaluate

HERE = Path(__file__).resolve().parent
SOURCE, TARGET = "012345", "6789"
CONTENDERS = {
    "scratch": [],
    "init_from": ["model.init_from={source}"],
    "init_from + freeze features": ["model.init_from={source}", "model.freeze=features"],
}


def subset(digits: Path, root: Path, classes: str, per_class: int | None) -> Path:
    """root/{train,val}/<digit>/ for `classes`, with at most `per_class` training images."""
    for split in ("train", "val"):
        for digit in classes:
            images = sorted((digits / split / digit).glob("*.png"))
            keep = images[:per_class] if split == "train" and per_class else images
            folder = root / split / digit
            folder.mkdir(parents=True)
            for image in keep:
                shutil.copy(image, folder / image.name)
    return root


def benchmark(workdir: Path, per_class: int, seeds: list[int]) -> dict:
    digits = digits_folder(workdir / "digits")
    source_root = subset(digits, workdir / "source", SOURCE, None)
    target_root = subset(digits, workdir / "target", TARGET, per_class)
    project = generate(workdir, "transfer", "image-classification", "image-folder", "digits")
    common = ["data.name=digits", "data.image_size=16"]
    source_run, _ = train_and_evaluate(project, "transfer", [*common, f"data.root={source_root}"])
    source = project / "runs" / "bench" / "last.pt"
    results: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    for seed in seeds:  # interleaved: every contender at each seed before the next seed
        for name, extra in CONTENDERS.items():
            settings = [*common, f"data.root={target_root}", f"train.seed={seed}"]
            settings += [item.format(source=source) for item in extra]
            result, _ = train_and_evaluate(project, "transfer", settings, f"{name}-{seed}")
            results[name].append(result["accuracy"])
            print(f"seed {seed} {name:28} val accuracy {result['accuracy']:.3f}", flush=True)
    return {
        "source_val_accuracy": source_run["accuracy"],
        "per_class": per_class,
        "num_target_train": per_class * len(TARGET),
        "num_target_val": sum(1 for _ in (target_root / "val").rglob("*.png")),
        "seeds": seeds,
        "accuracy": results,
        "settings": common,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=Path("/tmp/ptgen-transfer"))
    parser.add_argument("--per-class", type=int, default=25)
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--json", type=Path, default=HERE / "bench_transfer.json")
    args = parser.parse_args()
    if args.out_dir.exists():
        sys.exit(f"{args.out_dir} exists; pass a fresh --out-dir")
    seeds = [int(s) for s in args.seeds.split(",")]
    result = benchmark(args.out_dir, args.per_class, seeds)
    scratch = statistics.mean(result["accuracy"]["scratch"])
    print(f"\nsource (digits {SOURCE}) val accuracy {result['source_val_accuracy']:.3f}")
    print(f"{'target digits ' + TARGET:30} {'mean':>6} {'std':>6} {'vs scratch':>10}")
    for name, values in result["accuracy"].items():
        mean, std = statistics.mean(values), statistics.stdev(values)
        print(f"{name:30} {mean:6.3f} {std:6.3f} {mean / scratch:9.2f}x")
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
