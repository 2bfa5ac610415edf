"""`python -m <package> lr-find` (the lr-find feature): a learning-rate range test.

From the state `train` would start from (the same seed, model, optimizer and data, built in
a temporary directory: no run is touched) the learning rate grows exponentially from
--start-lr to --end-lr over --steps optimizer steps; the sweep ends early once the smoothed
loss is DIVERGED times its minimum, or not finite.

The smoothed loss at a step is the mean loss of the WINDOW steps either side of it: a
centred average has no lag, whereas an exponential moving average (fastai's 0.98) trails
a learning rate that grows by 8 decades in 100 steps by about 3 decades. The rule: the
suggested learning rate is where the smoothed loss falls fastest per unit of log(lr),
searched after the first SKIP share of the steps and before the smoothed loss's minimum
(past it, training diverges). Writes lr-find.csv (lr, loss, smoothed) and, with
matplotlib (the `lr-find` extra), lr-find.png into --output-dir; prints the suggestion and
the command that trains with it. Every parameter group's learning rate is scaled together
(a head at its own rate keeps its ratio); the schedule (warm-up, cosine, ...) is unused.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import importlib.util
import math
import shlex
import tempfile
from collections.abc import Iterator
from itertools import count, takewhile
from pathlib import Path

import torch

from .config import Config, ConfigError, load_config
from .engine import Batch, forward_backward, optimizer_step, to_device
from .runtime import DistInfo, get_device
from .train import Run, build_run

WINDOW = 5  # steps either side of a step in its smoothed loss
SKIP = 0.1  # share of the first steps where no suggestion is made
DIVERGED = 4.0  # the sweep stops when the smoothed loss exceeds this times its minimum


def run_lr_find(args: argparse.Namespace) -> int:
    """The command: sweep, write the curve, print the suggestion; 1 when there is none."""
    if args.steps < 10:
        raise ConfigError(f"--steps must be at least 10; got {args.steps}")
    if not 0 < args.start_lr < args.end_lr:
        raise ConfigError(f"expects 0 < --start-lr < --end-lr; got {args.start_lr}, {args.end_lr}")
    out = Path(args.output_dir)
    if blocked := next((p for p in (out, *out.parents) if p.exists() and not p.is_dir()), None):
        raise ConfigError(f"--output-dir {out}: {blocked} is a file, not a folder")
    lrs, losses = sweep(
        load_config(args.config, args.overrides), args.start_lr, args.end_lr, args.steps
    )
    smoothed = smooth(losses)
    if not any(map(math.isfinite, smoothed)):
        raise ConfigError(
            f"the loss was not finite within {WINDOW + 1} steps of --start-lr {args.start_lr:.2e} "
            f"(losses: {', '.join(f'{x:.3g}' for x in losses)}): lower --start-lr or check the data"
        )
    best = suggest(lrs, smoothed)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "lr-find.csv", lrs, losses, smoothed)
    print(f"swept {len(lrs)} steps, lr {lrs[0]:.2e} to {lrs[-1]:.2e}: wrote {out / 'lr-find.csv'}")
    if importlib.util.find_spec("matplotlib") is None:
        print("no plot: matplotlib is not installed (pip install -e '.[lr-find]')")
    else:
        print(f"wrote {plot(out / 'lr-find.png', lrs, losses, smoothed, best)}")
    if best is None:
        print("no suggestion: the smoothed loss did not fall; widen --start-lr / --end-lr")
        return 1
    print(
        f"suggested train.lr {best:.2e}: steepest descent of the smoothed loss before its minimum"
    )
    print(f"train with: {train_command(args, best)}")
    return 0


def sweep(
    config: Config, start_lr: float, end_lr: float, steps: int
) -> tuple[list[float], list[float]]:
    """One optimizer step per learning rate, exponentially from start_lr to end_lr, until
    the loss diverges; the learning rates and the losses of the steps taken."""
    with tempfile.TemporaryDirectory() as scratch:  # a fresh run whose files are not kept
        train = dataclasses.replace(config.train, resume="", out_dir=scratch)
        fresh = dataclasses.replace(config, train=train)
        run = build_run(fresh, DistInfo(), get_device(train.device))
        groups = run.optimizer.param_groups
        scales = [group.get("initial_lr", group["lr"]) / train.lr for group in groups]
        batches = endless(run)
        lrs: list[float] = []
        losses: list[float] = []
        for i in range(steps):
            lr = start_lr * (end_lr / start_lr) ** (i / (steps - 1))
            for group, scale in zip(groups, scales, strict=True):
                group["lr"] = lr * scale
            lrs.append(lr)
            losses.append(train_step(run, batches))
            smoothed = smooth(losses)
            if not math.isfinite(smoothed[-1]) or smoothed[-1] > DIVERGED * min(smoothed):
                break
    return lrs, losses


def endless(run: Run) -> Iterator[Batch]:
    """The training batches, epoch after epoch, in train mode."""
    run.train_model.train()
    for epoch in count():
        run.sampler.set_epoch(epoch, skip=0)
        yield from run.train_loader


def train_step(run: Run, batches: Iterator[Batch]) -> float:
    """One optimizer step over train.grad_accum_steps batches; their mean loss."""
    accum, device = run.config.train.grad_accum_steps, run.precision.device
    losses = [
        forward_backward(
            run.train_model, to_device(next(batches), device), run.task, run.precision, accum
        )
        for _ in range(accum)
    ]
    optimizer_step(run.optimizer, run.precision.scaler, run.config.train.grad_clip)
    return float(torch.stack(losses).mean())


def smooth(losses: list[float]) -> list[float]:
    """The mean loss over WINDOW steps either side of each step (fewer at the ends)."""
    windows = [losses[max(0, i - WINDOW) : i + WINDOW + 1] for i in range(len(losses))]
    return [sum(window) / len(window) for window in windows]


def suggest(lrs: list[float], smoothed: list[float]) -> float | None:
    """The learning rate of the steepest descent of `smoothed` per unit of log(lr), after
    the first SKIP share of the steps and before the minimum; None if it never falls."""
    finite = list(takewhile(math.isfinite, smoothed))
    lowest = min(range(len(finite)), key=finite.__getitem__, default=0)
    logs = [math.log(lr) for lr in lrs]
    slopes = {
        i: (finite[i + 1] - finite[i - 1]) / (logs[i + 1] - logs[i - 1])
        for i in range(max(1, int(SKIP * len(lrs))), min(lowest, len(finite) - 1))
    }
    steepest = min(slopes, key=slopes.__getitem__, default=None)
    return None if steepest is None or slopes[steepest] >= 0 else lrs[steepest]


def write_csv(path: Path, lrs: list[float], losses: list[float], smoothed: list[float]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["lr", "loss", "smoothed"])
        writer.writerows(zip(lrs, losses, smoothed, strict=True))


def plot(
    path: Path, lrs: list[float], losses: list[float], smoothed: list[float], best: float | None
) -> Path:
    """The loss against the learning rate (log scale), smoothed, with the suggestion."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    axes.plot(lrs, losses, color="0.7", linewidth=1, label="loss")
    axes.plot(
        lrs, smoothed, color="C0", linewidth=2, label=f"smoothed (mean of {2 * WINDOW + 1} steps)"
    )
    if best is not None:
        axes.axvline(best, color="C3", linestyle="--", label=f"suggested lr {best:.2e}")
    finite = list(takewhile(math.isfinite, smoothed))
    falling = finite[: min(range(len(finite)), key=finite.__getitem__) + 1]
    low = min(min(losses[: len(falling)]), min(falling))
    span = max(falling) - low
    if span > 0:  # the falling part fills the plot; the divergence leaves it at the top
        axes.set_ylim(low - 0.05 * span, max(falling) + 0.2 * span)
    axes.set_xscale("log")
    axes.set_xlabel("learning rate")
    axes.set_ylabel("training loss")
    axes.set_title("lr-find: steepest descent of the smoothed loss before its minimum")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def train_command(args: argparse.Namespace, lr: float) -> str:
    """The command line that trains with `lr`: this one's --config and --set, as train."""
    words = ["python", "-m", str(__package__), "train"]
    if args.config:
        words += ["--config", args.config]
    for item in args.overrides:
        if item.partition("=")[0].strip() != "train.lr":
            words += ["--set", item]
    return shlex.join([*words, "--set", f"train.lr={lr:.2e}"])
