"""What a run reports: a progress bar, metrics.csv, and the non-finite loss guard."""

from __future__ import annotations

import csv
import math
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from tqdm import tqdm

from . import checkpoint as ckpt
from .config import to_toml
from .runtime import DistInfo, all_reduce_sum

if TYPE_CHECKING:
    from .train import Run

FIELDS = ("step", "epoch", "split", "loss", "accuracy", "mae", "lr", "samples_per_sec")


class NonFiniteLossError(RuntimeError):
    """Training produced a NaN/inf loss; the message names the step."""


class LossWindow:
    """Per-step losses kept on the device, read back once per flush (no per-step sync)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.losses: list[torch.Tensor] = []
        self.first_step = 0
        self.started = time.perf_counter()

    def add(self, loss: torch.Tensor, step: int) -> None:
        if not self.losses:
            self.first_step = step
        self.losses.append(loss)

    def flush(self, batch_size: int, on_nonfinite: str, info: DistInfo) -> dict[str, float] | None:
        """Mean loss over all ranks and throughput since the last flush; raises on NaN/inf.

        on_nonfinite: "stop" raises, "warn" warns, "skip" (under a GradScaler, which has
        already skipped those steps) warns too. Every rank sees the same values, so under
        DDP all ranks stop together.
        """
        if not self.losses:
            return None
        losses = all_reduce_sum(torch.stack(self.losses).float(), info) / info.world_size
        values = losses.cpu().tolist()  # the one sync per interval
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        count = len(values)
        self.losses, self.started = [], time.perf_counter()
        bad = [i for i, v in enumerate(values) if not math.isfinite(v)]
        if bad:
            message = f"non-finite loss ({values[bad[0]]}) at step {self.first_step + bad[0]}"
            if on_nonfinite == "stop":
                raise NonFiniteLossError(message + "; stopping (train.on_nonfinite=warn continues)")
            if on_nonfinite == "skip":
                message += "; the GradScaler skipped that step"
            print(f"warning: {message}", file=sys.stderr)
        finite = [v for v in values if math.isfinite(v)]
        return {
            "loss": sum(finite) / len(finite) if finite else float("nan"),
            "samples_per_sec": count * batch_size / elapsed,
        }


class MetricsFile:
    """metrics.csv in out_dir: one row per log interval (train) and per evaluation (val)."""

    def __init__(
        self, path: Path, resume_step: int | None, enabled: bool, tensorboard: bool = False
    ) -> None:
        self.path, self.enabled, self.board = path, enabled, None
        if not enabled:
            return
        if tensorboard:
            self.board = _summary_writer(path.parent / "tensorboard")
        rows = []
        if resume_step is not None and path.exists():  # drop rows a crashed run wrote after it
            with open(path, newline="", encoding="utf-8") as handle:
                rows = [r for r in csv.DictReader(handle) if int(r["step"]) <= resume_step]
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, FIELDS)
            writer.writeheader()
            writer.writerows(rows)

    def write(self, **row: Any) -> None:
        if not self.enabled:
            return
        with open(self.path, "a", newline="", encoding="utf-8") as handle:
            csv.DictWriter(handle, FIELDS).writerow(
                {
                    k: (f"{v:.6g}" if isinstance(v, float) else v)
                    for k, v in row.items()
                    if k in FIELDS
                }
            )
        if self.board is not None:
            for key in ("loss", "accuracy", "mae", "lr", "samples_per_sec"):
                if isinstance(row.get(key), (int, float)):
                    self.board.add_scalar(f"{row['split']}/{key}", row[key], row["step"])
            self.board.flush()


def _summary_writer(log_dir: Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        raise RuntimeError(
            "train.logger=tensorboard needs tensorboard: pip install -e '.[tensorboard]'"
        ) from exc
    return SummaryWriter(str(log_dir))


def progress(batches: Iterable[Any], total: int, desc: str, enabled: bool) -> Iterator[Any] | tqdm:
    """A progress bar on an interactive terminal (main process only); silent otherwise."""
    if not (enabled and sys.stderr.isatty()):
        return iter(batches)
    return tqdm(batches, total=total, desc=desc, leave=False, dynamic_ncols=True)


def format_metrics(values: dict[str, Any]) -> str:
    return " ".join(
        f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items()
    )


class StepProfiler:
    """train.profile: a torch.profiler window over a few steps, a trace file and the top ops.

    On CUDA it also reports peak memory and `torch.cuda.memory_summary()`.
    """

    def __init__(self, enabled: bool, out_dir: Path, device: torch.device) -> None:
        self.out_dir, self.device, self.profiler = out_dir, device, None
        if not enabled:
            return
        activities = [torch.profiler.ProfilerActivity.CPU]
        if device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self.profiler = torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1),
            on_trace_ready=self._report,
            record_shapes=True,
        )
        self.profiler.start()

    def step(self) -> None:
        if self.profiler is not None:
            self.profiler.step()

    def stop(self) -> None:
        if self.profiler is not None:
            self.profiler.stop()
            self.profiler = None

    def _report(self, profiler: torch.profiler.profile) -> None:
        trace = self.out_dir / "profile" / "trace.json"
        trace.parent.mkdir(parents=True, exist_ok=True)
        profiler.export_chrome_trace(str(trace))
        sort_by = "self_cuda_time_total" if self.device.type == "cuda" else "self_cpu_time_total"
        print(profiler.key_averages().table(sort_by=sort_by, row_limit=10))
        print(f"profiler trace: {trace} (open in chrome://tracing or Perfetto)")
        if self.device.type == "cuda":
            peak = torch.cuda.max_memory_allocated(self.device) / 2**20
            print(f"peak CUDA memory: {peak:.1f} MiB")
            print(torch.cuda.memory_summary(self.device, abbreviated=True))


class Reporter:
    """Per-step bookkeeping: loss window, metrics rows, progress bar, profiler, step checkpoints."""

    def __init__(self, run: Run) -> None:
        self.run = run
        if run.info.is_main:
            run.out_dir.mkdir(parents=True, exist_ok=True)
            (run.out_dir / "config.toml").write_text(to_toml(run.config), encoding="utf-8")
        resume_step = run.state.step if run.resumed else None
        tensorboard = run.config.train.logger == "tensorboard"
        self.metrics = MetricsFile(
            run.out_dir / "metrics.csv", resume_step, run.info.is_main, tensorboard
        )
        self.window = LossWindow(run.settings.device)
        profile = run.config.train.profile and run.info.is_main
        self.profiler = StepProfiler(profile, run.out_dir, run.settings.device)
        self.bar: Any = None

    def after_step(self, loss: torch.Tensor) -> bool:
        """Called after every optimiser step; True stops training (max_steps reached)."""
        train, state = self.run.config.train, self.run.state
        self.window.add(loss, state.step)
        self.profiler.step()
        done = 0 < train.max_steps <= state.step
        checkpoint_now = train.checkpoint_every > 0 and state.step % train.checkpoint_every == 0
        if state.step % train.log_every == 0 or done or checkpoint_now:
            self.log()  # also checks the losses are finite before anything is saved
        if checkpoint_now and not done:
            self.run.save("last.pt")
            self.run.save(f"step-{state.step:08d}.pt")
            if self.run.info.is_main:
                ckpt.prune_step_checkpoints(self.run.out_dir, train.keep_last)
        return done

    def log(self) -> None:
        run = self.run
        train = run.config.train
        batch = train.batch_size * train.grad_accum_steps * run.info.world_size
        # Under a GradScaler a non-finite loss only skips its step: the weights stay finite.
        on_nonfinite = "skip" if run.scaler.is_enabled() else run.config.train.on_nonfinite
        values = self.window.flush(batch, on_nonfinite, run.info)
        if not values:
            return
        lr = run.scheduler.get_last_lr()[0]
        self.metrics.write(
            step=run.state.step, epoch=run.state.epoch + 1, split="train", lr=lr, **values
        )
        if hasattr(self.bar, "set_postfix"):
            self.bar.set_postfix(
                loss=f"{values['loss']:.4f}", samples_s=f"{values['samples_per_sec']:.0f}"
            )

    def epoch_end(self, result: dict[str, Any]) -> None:
        state = self.run.state
        self.metrics.write(step=state.step, epoch=state.epoch + 1, split="val", **result)
        if self.run.info.is_main:
            epochs = self.run.config.train.epochs
            print(f"epoch {state.epoch + 1}/{epochs} step {state.step}: {format_metrics(result)}")
