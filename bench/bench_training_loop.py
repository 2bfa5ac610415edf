"""Training-loop overhead: the generated loop vs a minimal hand-written loop vs Lightning.

Every contender trains its own copy of the same model (the generated project's default
CNN on 32x32 images, identical initial weights) on the same batches (preloaded once
from the project's own DataLoader), on CPU with a fixed thread count:

- generated: the body of the project's batch loop in `train.train(run)`, statement for
  statement (`generated_step` below), on everything `build_run` makes (the project's
  AdamW, warm-up/cosine scheduler, `runtime.precision`'s disabled GradScaler, gradient
  clipping at the default `train.grad_clip`) with a real `monitor.Monitor` built as
  `train` builds it: per batch `engine.to_device` + `engine.forward_backward`, then
  `engine.optimizer_step`, `scheduler.step()`, `monitor.record_step`, and every
  `train.log_every` steps `monitor.log_train` (loss window read back, metrics.csv row)
  with `train.check_finite`. What `train` does once per epoch (`sampler.set_epoch`,
  `model.train()`, `zero_grad`) is done once, before timing; evaluation and
  checkpoints at epoch ends are not timed (no contender has them);
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

The generated step is a copy of `train`'s loop body, so before any timing the script
checks the copy against the real thing: `train.train(run)` for `--check-steps` steps
and the copy on the same batches, each on a fresh `build_run` with the same seed, must
end with bit-identical weights and the same logged losses (else it stops). The result
is in the JSON (`reproduction_check`).

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
periodic log flushes) is shown beside it. With one thread the process is pinned to one
core.

(Template 0.1.0's loop was a function, `engine.train_one_epoch`, which this script called
on a one-batch list per step, paying its per-epoch set-up every step; 0.2.0's loop is
inline in `train.train`, hence the copy. Whole `train(run)` runs against whole Lightning
fits were not used: rounds timed one after another cannot resolve ~1% here, see above.)

    PYTHONPATH=src python bench/bench_training_loop.py --steps 800 --json /tmp/loop.json
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import io
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
Step = Callable[[Batch], Any]


class Batches:
    """A sized iterable of preloaded batches (Lightning reads a plain list as many loaders)."""

    def __init__(self, batches: list[Batch]) -> None:
        self.batches = batches

    def __iter__(self) -> Iterator[Batch]:
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


def make_monitor(run: Any, mods: dict[str, Any]) -> Any:
    """The Monitor exactly as `train.train` builds it (and the config it records)."""
    cfg = run.config.train
    monitor = mods["monitor"].Monitor(
        Path(cfg.out_dir),
        run.info,
        run.precision.device,
        run.task.metrics,
        cfg.batch_size * cfg.grad_accum_steps * run.info.world_size,
        resume_step=run.state.step if run.resumed else None,
        tensorboard=cfg.logger == "tensorboard",
        profile=cfg.profile,
    )
    monitor.record_config(Path(cfg.out_dir) / "config.toml", mods["config"].to_toml(run.config))
    return monitor


def generated_step(mods: dict[str, Any], run: Any, monitor: Any) -> Step:
    """One pass of the body of `train.train`'s batch loop, statement for statement.

    What `train` does once per epoch before its batch loop (`model.train()`,
    `zero_grad`) is done here, once. Returns whether `train` would stop (max_steps)."""
    engine, train = mods["engine"], mods["train"]
    cfg, state, task, device = run.config.train, run.state, run.task, run.precision.device
    out_dir = Path(cfg.out_dir)
    run.train_model.train()
    run.optimizer.zero_grad(set_to_none=True)
    losses: list[torch.Tensor] = []

    def step(batch: Batch) -> bool:
        nonlocal losses
        # --- from here to the end: train.train's loop body (`continue`/`break` -> return)
        state.batch_in_epoch += 1
        step_now = state.batch_in_epoch % cfg.grad_accum_steps == 0
        with contextlib.nullcontext() if step_now else engine.no_sync(run.train_model):
            batch = engine.to_device(batch, device)
            losses.append(
                engine.forward_backward(
                    run.train_model, batch, task, run.precision, cfg.grad_accum_steps
                )
            )
        if not step_now:
            return False
        engine.optimizer_step(run.optimizer, run.precision.scaler, cfg.grad_clip)
        run.scheduler.step()
        state.step += 1
        monitor.record_step(torch.stack(losses).mean(), state.step)
        losses = []

        done = 0 < cfg.max_steps <= state.step
        checkpoint_now = cfg.checkpoint_every > 0 and state.step % cfg.checkpoint_every == 0
        if state.step % cfg.log_every == 0 or checkpoint_now or done:
            lr = run.scheduler.get_last_lr()[0]
            train.check_finite(monitor.log_train(state.step, state.epoch + 1, lr), run)
        if checkpoint_now and not done:
            train.save(run, "last.pt")
            train.save(run, f"step-{state.step:08d}.pt")
            if run.info.is_main:
                mods["checkpoint"].prune_step_checkpoints(out_dir, cfg.keep_last)
        return done

    return step


def check_reproduction(
    mods: dict[str, Any], overrides: list[str], tmp: Path, steps: int
) -> dict[str, Any]:
    """`train.train(run)` for `steps` steps vs `generated_step` on the same batches, each on
    a fresh `build_run` (same seed): the weights must be bit-identical and the losses
    logged to metrics.csv the same. Raises otherwise."""

    def fresh(name: str) -> Any:
        config = mods["config"].load_config(
            None, [*overrides, f"train.out_dir={tmp / name}", f"train.max_steps={steps}"]
        )
        return mods["train"].build_run(config, mods["runtime"].DistInfo(), torch.device("cpu"))

    reference = fresh("check-train")
    with contextlib.redirect_stdout(io.StringIO()):  # its end-of-epoch evaluation line
        mods["train"].train(reference)
    copy_run = fresh("check-copy")
    rng = torch.get_rng_state()  # dropout draws from it: leave it as train() finds it
    copy_run.sampler.set_epoch(0)
    batches = list(itertools.islice(copy_run.train_loader, steps))
    torch.set_rng_state(rng)
    monitor = make_monitor(copy_run, mods)
    step = generated_step(mods, copy_run, monitor)
    done = [step(batch) for batch in batches]
    monitor.close()
    pairs = zip(
        reference.model.state_dict().items(), copy_run.model.state_dict().items(), strict=True
    )
    differing = [name for (name, a), (_, b) in pairs if not torch.equal(a, b)]

    def train_losses(run: Any) -> list[str]:
        path = Path(run.config.train.out_dir) / "metrics.csv"
        with path.open(encoding="utf-8") as handle:
            return [row["loss"] for row in csv.DictReader(handle) if row["split"] == "train"]

    result = {
        "steps": steps,
        "train_steps": reference.state.step,
        "copy_steps": copy_run.state.step,
        "copy_stopped_at_last_step": done[-1] and not any(done[:-1]),
        "differing_tensors": differing,
        "train_logged_losses": train_losses(reference),
        "copy_logged_losses": train_losses(copy_run),
    }
    result["identical"] = (
        not differing
        and result["train_steps"] == result["copy_steps"] == steps
        and result["copy_stopped_at_last_step"]
        and result["train_logged_losses"] == result["copy_logged_losses"]
    )
    if not result["identical"]:
        raise SystemExit(f"generated_step no longer reproduces train.train: {result}")
    return result


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
            steps_per_epoch = len(run.train_loader) // train_cfg.grad_accum_steps
            total = train_cfg.epochs * steps_per_epoch  # as build_run plans it
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
    overrides = ["train.device=cpu", "data.num_samples=1024", *SIZES[size]]
    check = check_reproduction(mods, overrides, tmp / size, args.check_steps)
    config = mods["config"].load_config(None, [*overrides, f"train.out_dir={tmp / size}"])
    run = mods["train"].build_run(config, mods["runtime"].DistInfo(), torch.device("cpu"))
    monitor = make_monitor(run, mods)
    plain = copy.deepcopy(run.model)  # identical initial weights
    optimizer = torch.optim.AdamW(plain.parameters(), **optimizer_settings(run.optimizer))
    others = {
        "generated": generated_step(mods, run, monitor),
        "minimal": minimal_step(plain, optimizer),
    }
    cycles = args.steps + args.warmup + 1  # the first Lightning step is not timed
    run.sampler.set_epoch(0)
    batches = list(itertools.islice(itertools.cycle(run.train_loader), cycles))
    result: dict[str, Any] = {
        "overrides": SIZES[size],
        "parameters": sum(p.numel() for p in run.model.parameters()),
        "batch_size": run.config.train.batch_size,
        "grad_clip": run.config.train.grad_clip,
        "log_every": run.config.train.log_every,
        "optimizer": optimizer_settings(run.optimizer),
        "reproduction_check": check,
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
    monitor.close()
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
    parser.add_argument(
        "--check-steps",
        type=int,
        default=20,
        help="steps of train.train vs the copied loop body, compared before timing",
    )
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
