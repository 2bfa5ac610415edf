"""Training-loop overhead: the generated loop vs a minimal hand-written loop vs Lightning.

All three train the same model (the generated project's default CNN on 32x32 images,
identical initial weights) with AdamW on the same preloaded batches (taken once from
the project's own DataLoader), on CPU with a fixed thread count:

- generated: the project's `engine.train_one_epoch` with everything `build_run` makes
  (StepSettings, AdamW, warm-up/cosine scheduler, the disabled GradScaler, gradient
  clipping at the default `train.grad_clip`) and the real `Reporter.after_step`
  bookkeeping (loss window flushed every `train.log_every` steps, metrics.csv rows);
- generated, grad_clip=0: the same with clipping off, to separate the cost of the
  clipping feature from the loop's own bookkeeping;
- minimal: `zero_grad / forward / loss / backward / step`, nothing else;
- lightning: a LightningModule around the same model, a fresh `Trainer` per round
  (no logger, checkpointing, progress bar or model summary).

Each round times `--steps` steps per contender; rounds are interleaved and repeated;
warm-up rounds are excluded. Ratios are medians of per-round ratios (each round
against the neighbouring minimal round), so slow drift in the load cancels. Both
wall time and this process's CPU time are reported: on a shared machine the
CPU-time figures move much less. Lightning's
timing starts after its first batch of each round (so Trainer set-up is not
counted) and covers the remaining steps.

    PYTHONPATH=src python bench/bench_training_loop.py --repeats 9 --json /tmp/loop.json
"""

from __future__ import annotations

import argparse
import copy
import itertools
import logging
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from _common import (
    generate_project,
    import_project,
    interleaved,
    machine,
    median,
    print_table,
    write_json,
)

Batch = dict[str, torch.Tensor]


class Batches:
    """The same preloaded batches, iterated by every contender (a sized iterable)."""

    def __init__(self, batches: list[Batch]) -> None:
        self.batches = batches

    def __iter__(self) -> Iterator[Batch]:
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


def build_generated(
    mods: dict[str, Any], out_dir: Path, overrides: list[str], steps: int
) -> tuple[Any, Any, Batches]:
    """The generated project's own Run and Reporter, and `steps` batches from its loader."""
    fixed = [f"train.out_dir={out_dir}", "train.device=cpu", "data.num_samples=1024"]
    config = mods["config"].load_config(None, fixed + overrides)
    run = mods["train"].build_run(config, mods["runtime"].DistInfo(), torch.device("cpu"))
    loader = run.loaders[0]
    batches = list(itertools.islice(itertools.cycle(loader), steps))
    return run, mods["monitor"].Reporter(run), Batches(batches)


def clocks() -> tuple[float, float]:
    """Wall time and this process's CPU time (the latter barely moves with other load)."""
    return time.perf_counter(), time.process_time()


def since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = clocks()
    return wall - start[0], cpu - start[1]


def generated_round(
    mods: dict[str, Any], run: Any, reporter: Any, batches: Batches
) -> tuple[float, float]:
    start = clocks()
    mods["engine"].train_one_epoch(
        run.train_model,
        batches,
        run.optimizer,
        run.scheduler,
        run.scaler,
        run.settings,
        run.state,
        reporter.after_step,
    )
    return since(start)


def minimal_round(model: torch.nn.Module, optimizer: Any, batches: Batches) -> tuple[float, float]:
    model.train()
    start = clocks()
    for batch in batches:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(batch["inputs"]), batch["targets"])
        loss.backward()
        optimizer.step()
    return since(start)


def lightning_runner(model: torch.nn.Module, lr: float, wd: float, batches: Batches) -> Callable:
    import lightning as L

    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)  # no per-fit banners
    warnings.filterwarnings("ignore", module="lightning")  # e.g. "few workers" hints

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
            return F.cross_entropy(self.model(batch["inputs"]), batch["targets"])

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.AdamW(self.parameters(), lr=lr, weight_decay=wd)

    class Clock(L.Callback):
        def on_train_batch_end(
            self, trainer: Any, module: Any, out: Any, batch: Any, i: int
        ) -> None:
            if i == 0:
                self.start = clocks()
            self.end = clocks()

    module, threads = Module(), torch.get_num_threads()

    def run_round() -> tuple[float, float]:
        clock = Clock()
        trainer = L.Trainer(
            accelerator="cpu",
            devices=1,
            max_steps=len(batches),
            max_epochs=1,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            num_sanity_val_steps=0,
            callbacks=[clock],
        )
        trainer.fit(module, train_dataloaders=batches)
        torch.set_num_threads(threads)  # in case the Trainer changed it
        # steps after the first batch, scaled to a whole round for comparable times
        scale = len(batches) / (len(batches) - 1)
        return tuple((e - s) * scale for e, s in zip(clock.end, clock.start, strict=True))

    return run_round


SIZES = {
    # the project's defaults: compute-bound on CPU, what the acceptance target is about
    "default": [],
    # a toy size where per-step overhead is a large share of the step: shows the loop's cost
    "tiny": ["data.image_size=8", "model.width=8"],
}


def compare(mods: dict[str, Any], tmp: Path, size: str, args: argparse.Namespace) -> dict:
    run, reporter, batches = build_generated(mods, tmp / size, SIZES[size], args.steps)
    train_cfg = run.config.train
    # the same loop with train.grad_clip=0: separates the bookkeeping from the clipping
    noclip = build_generated(mods, tmp / f"{size}-noclip", SIZES[size] + ["train.grad_clip=0"], 0)
    contenders: dict[str, Callable[[], tuple[float, float]]] = {
        "generated": lambda: generated_round(mods, run, reporter, batches),
        "generated, grad_clip=0": lambda: generated_round(mods, *noclip[:2], batches),
    }
    plain = copy.deepcopy(run.model)  # identical initial weights
    optimizer = torch.optim.AdamW(
        plain.parameters(), lr=train_cfg.lr, weight_decay=train_cfg.weight_decay
    )
    contenders["minimal"] = lambda: minimal_round(plain, optimizer, batches)
    if not args.no_lightning:
        contenders["lightning"] = lightning_runner(
            copy.deepcopy(run.model), train_cfg.lr, train_cfg.weight_decay, batches
        )
    interleaved(contenders, args.warmup)
    times = interleaved(contenders, args.repeats)
    reporter.profiler.stop()
    noclip[1].profiler.stop()
    result: dict[str, Any] = {
        "overrides": SIZES[size],
        "parameters": sum(p.numel() for p in run.model.parameters()),
        "batch_size": train_cfg.batch_size,
        "grad_clip": train_cfg.grad_clip,
        "log_every": train_cfg.log_every,
    }
    for index, clock in enumerate(("wall", "cpu")):
        rates = {name: [args.steps / t[index] for t in ts] for name, ts in times.items()}
        medians = {name: median(v) for name, v in rates.items()}
        result[clock] = {
            "steps_per_s": rates,
            "median_steps_per_s": medians,
            "ratio_vs_minimal": {k: v / medians["minimal"] for k, v in medians.items()},
            # per-round ratios against the minimal round run next to it, then their median:
            # drift in the machine's load cancels within each pair
            "paired_ratio_vs_minimal": {
                k: median([a / b for a, b in zip(v, rates["minimal"], strict=True)])
                for k, v in rates.items()
            },
        }
        if "lightning" in medians:
            pairs = zip(rates["generated"], rates["lightning"], strict=True)
            result[clock]["generated_vs_lightning"] = median([a / b for a, b in pairs])
    return result


def report(size: str, result: dict, args: argparse.Namespace) -> None:
    print(
        f"\n## {size} model ({result['parameters']:,} parameters, batch {result['batch_size']}"
        f"{', ' + ' '.join(result['overrides']) if result['overrides'] else ''}): "
        f"{args.steps} steps per round, {args.repeats} rounds, {args.threads} thread(s)\n"
    )
    rows = []
    for name in result["wall"]["median_steps_per_s"]:
        wall, cpu = result["wall"], result["cpu"]
        rows.append(
            [
                name,
                wall["median_steps_per_s"][name],
                wall["paired_ratio_vs_minimal"][name],
                cpu["median_steps_per_s"][name],
                cpu["paired_ratio_vs_minimal"][name],
            ]
        )
    headers = ["loop", "wall steps/s", "wall vs minimal", "CPU-time steps/s", "CPU vs minimal"]
    print_table(headers, rows)
    if "generated_vs_lightning" in result["wall"]:
        print(
            f"\ngenerated / lightning (median of paired ratios): "
            f"{result['wall']['generated_vs_lightning']:.3f}x (wall), "
            f"{result['cpu']['generated_vs_lightning']:.3f}x (CPU time)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="steps per round")
    parser.add_argument("--repeats", type=int, default=31, help="timed rounds per contender")
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds per contender")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--no-lightning", action="store_true", help="skip the Lightning row")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
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
