"""`repeat` and `cv`: several full training runs of one config, and their spread.

`repeat --seeds 1,2,3` trains one run per seed; `cv --folds K` one run per fold of the
training split (validated on that fold, trained on the others). Each run is a full `train`
in its own folder that continues from its checkpoints when the command runs again, so an
interrupted repeat or cv goes on where it stopped. Each run's final validation metrics, and
their mean and standard deviation, are printed and written to OUT/results.csv.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import statistics
from pathlib import Path
from typing import Any

import torch

from .config import Config, ConfigError, load_config
from .data import build_data
from .stopping import EXIT_STATUS
from .train import fit


def run_experiment(args: argparse.Namespace) -> int:
    """`repeat` and `cv`: several training runs of --config and the overrides."""
    config = load_config(args.config, args.overrides)
    if args.command == "repeat":
        return repeat(config, args.seeds, Path(args.out))
    seed = config.train.seed if args.seed is None else args.seed
    return cross_validate(config, args.folds, seed, Path(args.out))


def repeat(config: Config, seeds: list[int], out: Path) -> int:
    """One run per seed in OUT/seed-S; returns the exit status."""
    rows = []
    for seed in seeds:
        result = fit(member(config, out / f"seed-{seed}", seed=seed))
        if result["stopped_by"]:
            return EXIT_STATUS[result["stopped_by"]]
        rows.append({"seed": seed, **result})
    report(rows, out / "results.csv")
    return 0


def cross_validate(config: Config, folds: int, seed: int, out: Path) -> int:
    """K-fold cross-validation on the training split, one run per fold in OUT/fold-K."""
    targets = build_data(config.data, config.train.seed).train_targets()
    fold_of = saved_folds(out / "folds.json", assign_folds(targets, folds, seed), seed)
    rows = []
    for fold in range(folds):
        val = [i for i, f in enumerate(fold_of) if f == fold]
        train = [i for i, f in enumerate(fold_of) if f != fold]
        result = fit(member(config, out / f"fold-{fold}"), fold=(train, val))
        if result["stopped_by"]:
            return EXIT_STATUS[result["stopped_by"]]
        rows.append({"fold": fold, **result})
    report(rows, out / "results.csv")
    return 0


def member(config: Config, out_dir: Path, **train: Any) -> Config:
    """The config of one run of the group: its own out_dir, continued when it holds a run."""
    changes = {"out_dir": str(out_dir), "resume": "auto", **train}
    return dataclasses.replace(config, train=dataclasses.replace(config.train, **changes))


def assign_folds(targets: torch.Tensor, folds: int, seed: int) -> list[int]:
    """The fold of every sample: shuffled by `seed`, then dealt out in turn. Class labels
    are dealt class by class (stratified), so every fold holds its share of each class."""
    if not 2 <= folds <= len(targets):
        raise ConfigError(f"--folds must be between 2 and {len(targets)} (the training samples)")
    order = torch.randperm(len(targets), generator=torch.Generator().manual_seed(seed))
    if targets.dim() == 1 and not targets.is_floating_point():  # class labels
        order = order[torch.argsort(targets[order], stable=True)]  # by class, shuffled within
    fold_of = [0] * len(targets)
    for position, index in enumerate(order.tolist()):
        fold_of[index] = position % folds
    return fold_of


def saved_folds(path: Path, fold_of: list[int], seed: int) -> list[int]:
    """Write the assignment to `path`, or check it against the one a previous run saved
    there (a changed dataset, seed or fold count would mix two cross-validations)."""
    record = {"folds": max(fold_of) + 1, "seed": seed, "fold_of_sample": fold_of}
    if path.exists():
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved != record:
            raise ConfigError(
                f"{path} holds another fold assignment ({saved.get('folds')} folds, seed "
                f"{saved.get('seed')}, {len(saved.get('fold_of_sample', []))} samples); "
                "use another --out"
            )
        return fold_of
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return fold_of


def report(rows: list[dict[str, Any]], path: Path) -> None:
    """Print the runs' metrics with their mean and standard deviation; write them as CSV."""
    columns = [k for k, v in rows[0].items() if isinstance(v, (int, float)) and k != "stopped_by"]
    metrics = [k for k in columns[1:] if k not in ("step", "epoch", "num_samples")]
    mean = {k: statistics.fmean(row[k] for row in rows) for k in metrics}
    std = {k: statistics.stdev(row[k] for row in rows) if len(rows) > 1 else 0.0 for k in metrics}
    print(" ".join(f"{k:>12}" for k in columns))
    for row in rows:
        print(" ".join(f"{_cell(row[k]):>12}" for k in columns))
    summary = " ".join(f"{k} {mean[k]:.4f} +/- {std[k]:.4f}" for k in metrics)
    print(f"mean +/- std over {len(rows)} runs: {summary}")
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        writer.writerow({columns[0]: "mean", **mean})
        writer.writerow({columns[0]: "std", **std})
    print(f"wrote {path}")


def _cell(value: float | int) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)
