"""`python -m <package> train`: `build_run` makes the model, data, optimizer and schedule
(restored on resume); `train` is the whole loop, every decision in the open: the optimizer
step every `train.grad_accum_steps` batches, logs, checkpoints, the stops (max_steps, a
signal, early stopping), each epoch's evaluation and best.pt; the monitor only records.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader

from . import checkpoint as ckpt
from . import provenance
from .config import Config, to_toml
from .data import DataBundle, ResumableSampler, build_data, build_loaders
from .engine import evaluate, forward_backward, no_sync, optimizer_step, to_device
from .models import build_model, build_state, unwrap
from .monitor import LossSummary, Monitor, format_metrics
from .optim import build_optimizer, build_scheduler, replan
from .runtime import DistInfo, Precision, barrier, distributed, precision, set_seed
from .stopping import StopSignals, improves
from .tasks import Task, get_task


class NonFiniteLossError(RuntimeError):
    """Training produced a NaN/inf loss; the message names the step."""


@dataclass
class Run:
    """Everything a training run is made of, built once by `build_run`."""

    config: Config
    task: Task
    info: DistInfo
    out_dir: Path  # train.out_dir, with ~ expanded
    model: nn.Module  # the plain module: what checkpoints hold
    train_model: nn.Module  # the same module, wrapped by DDP / torch.compile as configured
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    precision: Precision
    train_loader: DataLoader
    val_loader: DataLoader
    sampler: ResumableSampler  # set_epoch(epoch, skip): where each epoch starts
    data: DataBundle  # its spec and state (fitted on the training split) go in every checkpoint
    state: ckpt.TrainState
    resumed: bool
    signals: StopSignals  # set by SIGTERM, SIGUSR1 or Ctrl-C; read by the loop at each step


def fit(config: Config) -> dict[str, Any]:
    """Train as configured (in one process, or in every process under torchrun)."""
    with distributed(config.train.device) as (info, device):
        out_dir = Path(config.train.out_dir).expanduser()
        with ckpt.run_lock(out_dir) if info.is_main else contextlib.nullcontext():
            run = build_run(config, info, device)
            with run.signals.installed():  # from here on a stop signal ends the run cleanly
                result = train(run, start_monitor(run))
            # Free DDP's reducer while the process group lives: when the reducer drops the
            # last reference to a gloo group, the teardown deadlocks now and then.
            del run
            if info.enabled:  # gc.collect takes 0.1 s once torch._dynamo is imported
                gc.collect()
            return result


def start_monitor(run: Run) -> Monitor:
    """What the run records: metrics.csv (on resume, up to its step)."""
    cfg = run.config.train
    samples_per_step = cfg.batch_size * cfg.grad_accum_steps * run.info.world_size
    resume_step = run.state.step if run.resumed else None
    return Monitor(run.out_dir, run.info, run.task.metrics, samples_per_step, resume_step)


def train(run: Run, monitor: Monitor) -> dict[str, Any]:
    """The loop; the last validation metrics, the final step and epoch, and `stopped_by`."""
    cfg, state, task, device = run.config.train, run.state, run.task, run.precision.device
    out_dir, accum, patience = run.out_dir, cfg.grad_accum_steps, cfg.early_stopping_patience
    monitor.record_config(out_dir / "config.toml", to_toml(run.config), run.config.to_dict())
    result: dict[str, Any] = {}
    done = 0 < cfg.max_steps <= state.step  # train.max_steps reached (also: resumed there)
    stopped_by = None  # the name of a stop signal (SIGTERM, SIGUSR1, SIGINT)
    stop_early = 0 < patience <= state.evals_without_improvement  # also when resumed
    stop = run.signals.pending  # a stop signal cuts an evaluation short
    while state.epoch < cfg.epochs and not (done or stopped_by or stop_early):
        run.sampler.set_epoch(state.epoch, skip=state.batch_in_epoch * cfg.batch_size)
        run.train_model.train()
        run.optimizer.zero_grad(set_to_none=True)
        losses = []  # of the batches of the current optimizer step
        desc = f"epoch {state.epoch + 1}/{cfg.epochs}"
        for batch in monitor.progress(run.train_loader, len(run.train_loader), desc):
            state.batch_in_epoch += 1
            step_now = state.batch_in_epoch % accum == 0  # the last batch of an optimizer step
            batch = to_device(batch, device)
            with contextlib.nullcontext() if step_now else no_sync(run.train_model):
                loss = forward_backward(run.train_model, batch, task, run.precision, accum)
            losses.append(loss)  # under DDP, gradients were all-reduced only if step_now
            if not step_now:
                continue
            optimizer_step(run.optimizer, run.precision.scaler, cfg.grad_clip)
            run.scheduler.step()
            state.step += 1
            monitor.record_step(losses[0] if accum == 1 else torch.stack(losses).mean(), state.step)
            losses = []

            done = 0 < cfg.max_steps <= state.step
            stopped_by = run.signals.agreed()  # under torchrun, the same on every rank
            checkpoint_now = cfg.checkpoint_every > 0 and state.step % cfg.checkpoint_every == 0
            if state.step % cfg.log_every == 0 or checkpoint_now or done or stopped_by:
                lr = run.scheduler.get_last_lr()[0]
                check_finite(monitor.log_train(state.step, state.epoch + 1, lr), run)
            if checkpoint_now and not (done or stopped_by):
                save(run, "last")
                save(run, f"step-{state.step:08d}")
                if run.info.is_main:
                    ckpt.prune_step_checkpoints(out_dir, cfg.keep_last)
            if done or stopped_by:
                break

        if not stopped_by:  # no evaluation after a signal: a preempted job has seconds left
            # a signal during it ends it after the batch at hand and stops the run here
            model = unwrap(run.train_model)
            scores = evaluate(model, run.val_loader, task, run.precision, run.info, stop=stop)
            stopped_by = run.signals.agreed()
        if stopped_by:  # last.pt; resumed, the run evaluates this epoch (if it ended) first
            save(run, "last")
            say_stopped(run, stopped_by)
            break
        result = scores
        monitor.log_eval(state.step, state.epoch + 1, cfg.epochs, result)
        if not done:  # the epoch ran to its end: the next one, and early stopping counts it
            state.epoch, state.batch_in_epoch = state.epoch + 1, 0
            value = result[task.monitor]
            improved = improves(task, value, state.patience_best, cfg.early_stopping_min_delta)
            state.patience_best = value if improved else state.patience_best
            stale = 0 if improved else state.evals_without_improvement + 1
            state.evals_without_improvement = stale
            stop_early = 0 < patience <= stale
        if task.is_better(result[task.monitor], state.best_metric):
            state.best_metric, state.best_scores = result[task.monitor], result
            saved = save(run, "best")
            if run.info.is_main and (out_dir / "best.pt").is_file():  # MODEL_CARD.md beside it
                provenance.write_card(out_dir / "best.pt", run.model, saved)
        save(run, "last")
        if stop_early and run.info.is_main:
            print(f"early stopping: no improvement of {task.monitor} in {patience} evaluations")
        if state.epoch < cfg.epochs and not (done or stop_early):  # another epoch is next
            stopped_by = run.signals.agreed()  # a signal during the saves: no step of it
            if stopped_by:
                say_stopped(run, stopped_by)
    if not result and not stopped_by:  # nothing was left to train: report where it ended
        result = evaluate(unwrap(run.train_model), run.val_loader, task, run.precision, run.info)
        if run.info.is_main:
            print(f"nothing left to train ({state.position()}); {format_metrics(result)}")
    return {**result, "step": state.step, "epoch": state.epoch, "stopped_by": stopped_by}


def say_stopped(run: Run, signal_name: str) -> None:
    """Where a signal stopped the run, and how to continue it (last.pt holds it)."""
    if run.info.is_main:
        where = run.state.position()
        print(f"{signal_name}: stopped at {where}; continue with --set train.resume=auto")


def build_run(config: Config, info: DistInfo, device: torch.device) -> Run:
    """Model, data, optimizer and schedule as configured; on resume, restored in place."""
    out_dir = Path(config.train.out_dir).expanduser()
    resume = ckpt.resolve_resume(config.train.resume, out_dir, info.is_main)
    set_seed(config.train.seed, config.train.deterministic)
    saved = resume[1] if resume else {}
    amp = precision(device, config.train)  # "auto" resolved: config.toml and checkpoints say
    if info.is_main:  # what was chosen
        cfg = config.train
        print(f"amp={cfg.amp} amp_dtype={cfg.amp_dtype} matmul_precision={cfg.matmul_precision}")
    changes = ckpt.resume_changes(saved["config"], config.to_dict(), resume[0]) if resume else []
    bundle = build_data(config.data, config.train.seed, saved.get("data_state"))
    task = get_task(config.task, config.train.monitor).for_data(bundle.spec, bundle.state)
    model = build_model(config.model, bundle.spec)
    model = model.to(device)  # moved once, before the loop
    train_loader, val_loader, sampler = build_loaders(bundle, config, info, device)
    optimizer = build_optimizer(model, config.train, device)
    steps_per_epoch = len(train_loader) // config.train.grad_accum_steps
    schedule = build_scheduler(optimizer, config.train, steps_per_epoch)
    state = ckpt.TrainState()
    if resume:  # after everything is built, so the restored RNG states are not disturbed
        path, checkpoint = resume
        objects = (model, optimizer, schedule, amp.scaler)
        state = ckpt.restore_training(checkpoint, path, *objects, config.to_dict(), info.world_size)
        changes += replan(schedule, config.train, steps_per_epoch)  # the run's new length
        if info.is_main:
            print(f"resuming from {path} at {state.position()}")
            provenance.warn_changes(checkpoint, config.to_dict())  # new code or data: one line
            if changes:
                print(f"resuming with changed settings, applied: {'; '.join(changes)}")
    return Run(
        config=config,
        task=task,
        info=info,
        out_dir=out_dir,
        model=model,
        train_model=wrap_model(model, config, info, device),
        optimizer=optimizer,
        scheduler=schedule,
        precision=amp,
        train_loader=train_loader,
        val_loader=val_loader,
        sampler=sampler,
        data=bundle,
        state=state,
        resumed=resume is not None,
        signals=StopSignals(info),
    )


def wrap_model(model: nn.Module, config: Config, info: DistInfo, device: torch.device) -> nn.Module:
    """DDP first, then torch.compile (the order the PyTorch docs recommend)."""
    if info.enabled:
        ids = [device.index] if device.type == "cuda" else None
        model = nn.parallel.DistributedDataParallel(model, device_ids=ids)
    if config.train.compile:
        model = torch.compile(model, mode=config.train.compile_mode)
    return model


def check_finite(summary: LossSummary | None, run: Run) -> None:
    """train.on_nonfinite: "stop" raises before a save, "warn" goes on (a GradScaler skips)."""
    if summary is None or summary.nonfinite is None:
        return
    step, value = summary.nonfinite
    message = f"non-finite loss ({value}) at step {step}"
    if run.precision.scaler.is_enabled():
        message += "; the GradScaler skipped that step"
    elif run.config.train.on_nonfinite == "stop":
        raise NonFiniteLossError(message + "; stopping (--set train.on_nonfinite=warn continues)")
    if run.info.is_main:
        print(f"warning: {message}", file=sys.stderr)


def save(run: Run, stem: str) -> dict[str, Any]:
    """Checkpoint `stem`.pt from rank 0, never with non-finite weights; every rank waits."""
    path = run.out_dir / f"{stem}.pt"
    state = ckpt.training_state(
        run.scheduler,
        run.precision.scaler,
        run.state,
        run.config.to_dict(),
        run.data.state,
        run.data.spec,
        build_state(run.model),  # what a checkpoint's model is rebuilt from, besides the config
        run.info.world_size,
    )
    if run.info.is_main:
        ckpt.save_if_finite(path, ckpt.training_payload(run.model, run.optimizer, state))
    barrier(run.info)
    return state  # what was saved, but the model's and optimizer's states
