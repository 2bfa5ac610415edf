"""Training-loop overhead: the generated loop vs a minimal hand-written loop vs Lightning.

Every contender trains its own copy of the same model (the generated project's default
CNN on 32x32 images, identical initial weights) on the same batches (preloaded once
from the project's own DataLoader), on CPU with a fixed thread count:

- generated: the project's `engine.train_one_epoch` with everything `build_run` makes
  (StepSettings, the project's AdamW, warm-up/cosine scheduler, the disabled GradScaler,
  gradient clipping at the default `train.grad_clip`) and the real `Reporter.after_step`
  bookkeeping (loss window flushed every `train.log_every` steps, metrics.csv rows);
- minimal: `zero_grad / forward / loss / backward / step`, nothing else, with the
  project's optimizer settings;
- lightning: the same job as a LightningModule in a `Trainer`: the project's optimizer
  settings and scheduler (stepped every step), the same gradient clipping
  (`gradient_clip_val`), the loss logged with `self.log` to a CSVLogger every `log_every`
  steps; no checkpointing, progress bar or model summary (the generated contender has
  none of those either);
- lightning, torch-default AdamW: the same with `torch.optim.AdamW(params, lr,
  weight_decay)` as Lightning's docs write it, without the project's `fused=True`.

So "lightning" differs from "generated" by the loop alone (same maths, same optimizer
kernel); the last row adds what the project's optimizer choice is worth.

Lockstep timing. This machine's speed wanders by +-15% from one step to the next
(shared host), far more than the ~1% a loop's overhead costs on the default model, so
rounds timed one after another cannot resolve it. Instead each Lightning run drives the
others: after every Lightning step, a callback runs one step of each other contender
(order alternating), each timed alone, and Lightning's own step is timed from the
callback's return to its next call (so it includes everything Lightning does per step:
batch fetch, hooks, logging, clipping, optimizer). The steps of one cycle run within a
few hundred milliseconds of each other, and the statistic is the median over cycles of
the per-cycle time ratio, with a bootstrap 95% interval; "faster in" counts the cycles
the generated step was the quicker one. The total-time ratio (which also carries the
periodic log flushes) is shown beside it. A generated step is one call of
`train_one_epoch` on a one-batch list, which adds that function's per-epoch set-up
(`model.train()`, `zero_grad`; ~0.15 ms) to every step: a bias against the generated
loop. (Running the unchanged loop in a thread fed one batch at a time avoids that bias
but was dropped: there the loop's steps ran ~14% slower than in the main thread, from
one run to the next, for no reason in its code.) With one thread the process is pinned to
one core.

    PYTHONPATH=src python bench/bench_training_loop.py --steps 800 --json /tmp/loop.json
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from _common import (
    Times,
    bootstrap_ci,
    clocks,
    generate_project,
    import_project,
    machine,
    median,
    since,
    write_json,
)

Batch = dict[str, torch.Tensor]
Step = Callable[[Batch], None]


class Batches:
    """A sized iterable of preloaded batches (Lightning reads a plain list as many loaders)."""

    def __init__(self, batches: list[Batch]) -> None:
        self.batches = batches

    def __iter__(self) -> Iterator[Batch]:
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


def generated_step(mods: dict[str, Any], run: Any, reporter: Any) -> Step:
    """One step of the project's own loop: train_one_epoch over a one-batch list."""

    def step(batch: Batch) -> None:
        mods["engine"].train_one_epoch(
            run.train_model,
            [batch],
            run.optimizer,
            run.scheduler,
            run.scaler,
            run.settings,
            run.state,
            reporter.after_step,
        )

    return step


def minimal_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> Step:
    model.train()

    def step(batch: Batch) -> None:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(batch["inputs"]), batch["targets"])
        loss.backward()
        optimizer.step()

    return step


def lightning_lockstep(
    mods: dict[str, Any],
    run: Any,
    batches: list[Batch],
    others: dict[str, Step],
    log_dir: Path,
    fused: bool,
) -> dict[str, list[Times]]:
    """One Lightning run of len(batches) steps; after each, one step of every other.

    Returns each contender's step times, cycle by cycle (Lightning's step i, then the
    others' step i on the same batch), from the second cycle on.
    """
    import lightning as L
    from lightning.pytorch.loggers import CSVLogger

    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)  # no per-fit banners
    warnings.filterwarnings("ignore", module="lightning")  # e.g. "few workers" hints
    train_cfg = run.config.train

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = copy.deepcopy(run.model)  # identical initial weights

        def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
            loss = F.cross_entropy(self.model(batch["inputs"]), batch["targets"])
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self) -> Any:
            settings = optimizer_settings(run.optimizer)
            if not fused:
                settings = {"lr": settings["lr"], "weight_decay": settings["weight_decay"]}
            optimizer = torch.optim.AdamW(self.parameters(), **settings)
            total = train_cfg.epochs * len(run.loaders[0])  # as build_run plans it
            schedule = mods["train"].warmup_cosine(optimizer, train_cfg.warmup_steps, total)
            return {
                "optimizer": optimizer,
                "lr_scheduler": {"scheduler": schedule, "interval": "step"},
            }

    class Lockstep(L.Callback):
        def __init__(self) -> None:
            self.times: dict[str, list[Times]] = {"lightning": [], **{name: [] for name in others}}
            self.resumed: Times | None = None

        def on_train_batch_end(
            self, trainer: Any, module: Any, out: Any, batch: Batch, i: int
        ) -> None:
            if self.resumed is not None:
                self.times["lightning"].append(since(self.resumed))
            for name in list(others) if i % 2 == 0 else reversed(others):
                start = clocks()
                others[name](batch)
                self.times[name].append(since(start))
            self.resumed = clocks()

    lockstep, threads = Lockstep(), torch.get_num_threads()
    trainer = L.Trainer(
        accelerator="cpu",
        devices=1,
        max_steps=len(batches),
        max_epochs=1,
        gradient_clip_val=train_cfg.grad_clip,
        gradient_clip_algorithm="norm",
        logger=CSVLogger(log_dir),
        log_every_n_steps=train_cfg.log_every,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=[lockstep],
    )
    trainer.fit(Module(), train_dataloaders=Batches(batches))
    torch.set_num_threads(threads)  # in case the Trainer changed it
    return {
        name: times[-len(lockstep.times["lightning"]) :] for name, times in lockstep.times.items()
    }


def optimizer_settings(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The generated optimizer's constructor settings (lr, weight_decay, fused, ...)."""
    keys = ("lr", "weight_decay", "betas", "eps", "fused", "foreach")
    return {key: optimizer.defaults[key] for key in keys}


SIZES = {
    # the project's defaults: compute-bound on CPU, what the acceptance target is about
    "default": [],
    # a toy size where per-step overhead is a large share of the step: shows the loop's cost
    "tiny": ["data.image_size=8", "model.width=8"],
}


def compare(mods: dict[str, Any], tmp: Path, size: str, args: argparse.Namespace) -> dict:
    """Two lockstep runs (one per Lightning variant), each also stepping generated and minimal."""
    overrides = [f"train.out_dir={tmp / size}", "train.device=cpu", "data.num_samples=1024"]
    config = mods["config"].load_config(None, overrides + SIZES[size])
    run = mods["train"].build_run(config, mods["runtime"].DistInfo(), torch.device("cpu"))
    reporter = mods["monitor"].Reporter(run)
    plain = copy.deepcopy(run.model)  # identical initial weights
    optimizer = torch.optim.AdamW(plain.parameters(), **optimizer_settings(run.optimizer))
    others = {
        "generated": generated_step(mods, run, reporter),
        "minimal": minimal_step(plain, optimizer),
    }
    cycles = args.steps + args.warmup + 1  # the first Lightning step is not timed
    batches = list(itertools.islice(itertools.cycle(run.loaders[0]), cycles))
    result: dict[str, Any] = {
        "overrides": SIZES[size],
        "parameters": sum(p.numel() for p in run.model.parameters()),
        "batch_size": run.config.train.batch_size,
        "grad_clip": run.config.train.grad_clip,
        "log_every": run.config.train.log_every,
        "optimizer": optimizer_settings(run.optimizer),
        "runs": {},
    }
    for name, fused in (("lightning", True), ("lightning, torch-default AdamW", False)):
        times = lightning_lockstep(mods, run, batches, others, tmp / f"{size}-{name}", fused)
        times = {key: value[args.warmup :] for key, value in times.items()}
        times[name] = times.pop("lightning")
        result["runs"][name] = {
            clock: summarise({key: [t[index] for t in value] for key, value in times.items()})
            for index, clock in enumerate(("wall", "cpu"))
        }
    reporter.profiler.stop()
    return result


def summarise(times: dict[str, list[float]]) -> dict[str, Any]:
    """Per-contender median step time; the generated loop against each other contender."""
    ours = times["generated"]
    versus = {}
    for name, theirs in times.items():
        if name == "generated":
            continue
        cycles = list(zip(theirs, ours, strict=True))  # speed ratio generated/other per cycle

        def median_ratio(sample: list[tuple[float, float]]) -> float:
            return median([t / o for t, o in sample])

        def total_ratio(sample: list[tuple[float, float]]) -> float:
            return sum(t for t, _ in sample) / sum(o for _, o in sample)

        versus[name] = {
            "median_ratio": median_ratio(cycles),
            "median_ratio_ci95": bootstrap_ci(cycles, median_ratio),
            "total_ratio": total_ratio(cycles),
            "total_ratio_ci95": bootstrap_ci(cycles, total_ratio),
            "generated_faster_in": sum(o < t for t, o in cycles),
            "cycles": len(cycles),
        }
    return {
        "median_step_ms": {name: 1000 * median(values) for name, values in times.items()},
        "step_s": times,
        "generated_vs": versus,
    }


def report(size: str, result: dict, args: argparse.Namespace) -> None:
    cycles = len(next(iter(result["runs"].values()))["cpu"]["step_s"]["generated"])
    print(
        f"\n## {size} model ({result['parameters']:,} parameters, batch {result['batch_size']}"
        f"{', ' + ' '.join(result['overrides']) if result['overrides'] else ''}): "
        f"{cycles} lockstep cycles per Lightning run, {args.threads} thread(s)\n"
    )
    print(
        "| run | contender | median step [ms] | generated speed / this: median of per-cycle"
        " ratios [95% CI] | faster in | ratio of total times [95% CI] |"
    )
    print("|---|---|---|---|---|---|")
    for clock in ("cpu", "wall"):
        for run_name, run in result["runs"].items():
            stats = run[clock]
            for name, ms in stats["median_step_ms"].items():
                cells = ["-", "-", "-"]
                if name in stats["generated_vs"]:
                    v = stats["generated_vs"][name]
                    cells = [
                        f"{v['median_ratio']:.3f} [{v['median_ratio_ci95'][0]:.3f}, "
                        f"{v['median_ratio_ci95'][1]:.3f}]",
                        f"{v['generated_faster_in']}/{v['cycles']}",
                        f"{v['total_ratio']:.3f} [{v['total_ratio_ci95'][0]:.3f}, "
                        f"{v['total_ratio_ci95'][1]:.3f}]",
                    ]
                print(f"| {run_name} ({clock}) | {name} | {ms:.2f} | " + " | ".join(cells) + " |")


def pool(paths: list[Path]) -> dict[str, dict]:
    """Earlier --json outputs merged: the cycles of all of them, summarised together."""
    files = [json.loads(path.read_text(encoding="utf-8")) for path in paths]
    pooled = {}
    for size in SIZES:
        parts = [f[size] for f in files if size in f]
        if not parts:
            continue
        runs = {}
        for run, clocks_ in parts[0]["runs"].items():
            runs[run] = {
                clock: summarise(
                    {
                        name: [
                            t for part in parts for t in part["runs"][run][clock]["step_s"][name]
                        ]
                        for name in stats["step_s"]
                    }
                )
                for clock, stats in clocks_.items()
            }
        pooled[size] = {**parts[0], "runs": runs}
    return pooled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=800, help="timed cycles per Lightning run")
    parser.add_argument("--warmup", type=int, default=10, help="untimed cycles first")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--pool", type=Path, nargs="+", help="no run: merge earlier --json outputs and report"
    )
    args = parser.parse_args()
    if args.pool:
        for size, result in pool(args.pool).items():
            report(size, result, args)
        return
    torch.set_num_threads(args.threads)
    if args.threads == 1 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core: no migrations
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-loop-") as tmp:
        mods = import_project(generate_project(Path(tmp)))
        for size in args.sizes:
            results[size] = compare(mods, Path(tmp), size, args)
    for size, result in results.items():
        report(size, result, args)
    settings = {**vars(args), "json": str(args.json)}
    write_json(
        args.json,
        {"benchmark": "training_loop", "settings": settings, "machine": machine(), **results},
    )


if __name__ == "__main__":
    main()
