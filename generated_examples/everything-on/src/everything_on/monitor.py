"""What a run records: the resolved config, metrics.csv, a progress bar and the training-loss
window, with the time spent waiting for data; and the trackers the config asks for (`trackers`).

The monitor only records what the training loop hands it: it never saves a checkpoint,
never stops training and never sees the run itself.
"""

from __future__ import annotations

import csv
import io
import math
import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from .runtime import DistInfo, all_reduce_sum


@dataclass(frozen=True)
class LossSummary:
    """The training losses since the last log, averaged over the steps and all ranks."""

    loss: float  # mean of the finite losses (NaN when none was finite)
    samples_per_sec: float
    data_wait: float  # share of the time spent waiting for the next batch (mean of the ranks)
    nonfinite: tuple[int, float] | None = None  # (step, value) of the first NaN/inf loss


class LossWindow:
    """Per-step losses kept on the device, read back once per log (no per-step sync), and
    the host time spent waiting for batches; the clock pauses between epochs (evaluation and
    checkpoints are not training time); `waited` and `elapsed` are the run's totals."""

    def __init__(self) -> None:
        self.losses: list[torch.Tensor] = []
        self.first_step = 0
        self.started = time.perf_counter()
        self.paused_at: float | None = None
        self.waiting = 0.0  # seconds spent in the loader's next() since the last flush
        self.waited = self.elapsed = 0.0  # the run's totals, over the flushed intervals

    def pause(self) -> None:
        self.paused_at = time.perf_counter()

    def resume(self) -> None:
        if self.paused_at is not None:  # the pause does not count as elapsed time
            self.started += time.perf_counter() - self.paused_at
            self.paused_at = None

    def add(self, loss: torch.Tensor, step: int) -> None:
        if not self.losses:
            self.first_step = step
        self.losses.append(loss)

    def flush(self, samples_per_step: int, info: DistInfo) -> LossSummary | None:
        """Summarise and empty the window; every rank must call it (losses are all-reduced)."""
        if not self.losses:
            return None
        losses = torch.stack(self.losses).float()  # (steps,)
        waiting = torch.tensor([self.waiting], device=losses.device)  # (1,), one all-reduce
        values = all_reduce_sum(torch.cat([losses, waiting]), info) / info.world_size
        *values, waiting = values.cpu().tolist()  # the one host sync per log interval
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        self.losses, self.started, self.waiting = [], time.perf_counter(), 0.0
        self.waited, self.elapsed = self.waited + waiting, self.elapsed + elapsed
        finite = [v for v in values if math.isfinite(v)]
        bad = [(self.first_step + i, v) for i, v in enumerate(values) if not math.isfinite(v)]
        return LossSummary(
            loss=sum(finite) / len(finite) if finite else float("nan"),
            samples_per_sec=len(values) * samples_per_step / elapsed,
            data_wait=min(waiting / elapsed, 1.0),
            nonfinite=bad[0] if bad else None,
        )


class MetricsFile:
    """metrics.csv: a row per log interval ("train") and evaluation ("val"); on resume, rows
    after the checkpoint and damaged ones are dropped (rewritten through a temporary file)."""

    def __init__(self, path: Path, columns: tuple[str, ...], resume_step: int | None) -> None:
        self.path, self.columns = path, columns
        rows = []
        if resume_step is not None and path.exists():
            rows, damaged = rows_up_to(path, resume_step)
            if damaged:
                print(f"warning: {path}: skipped {damaged} damaged row(s)", file=sys.stderr)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, columns, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, path)

    def write(self, row: dict[str, Any]) -> None:
        with open(self.path, "a", newline="", encoding="utf-8") as handle:
            values = {k: f"{v:.6g}" if isinstance(v, float) else v for k, v in row.items()}
            csv.DictWriter(handle, self.columns, extrasaction="ignore").writerow(values)


def rows_up_to(path: Path, last_step: int) -> tuple[list[dict[str, str]], int]:
    """The well-formed rows of `path` with step <= last_step, and the count of damaged ones."""
    text = path.read_text(encoding="utf-8", errors="replace").replace("\0", "")
    kept, damaged = [], 0
    try:
        for row in csv.DictReader(io.StringIO(text)):
            step = row.get("step") or ""
            if not step.isdigit() or None in row or None in row.values():
                damaged += 1
            elif int(step) <= last_step:
                kept.append(row)
    except csv.Error:
        damaged += 1
    return kept, damaged


class Tracker:
    """Where a run also reports, besides metrics.csv (an experiment tracker, a profiler):
    subclass it and hand it to the Monitor (train.py's `trackers` makes the configured
    ones). Each method does nothing unless overridden."""

    def log_params(self, values: dict[str, Any]) -> None:
        """The resolved config, once at the start of a run."""

    def log_metrics(self, split: str, row: dict[str, Any], step: int) -> None:
        """A metrics row, as it is written to metrics.csv."""

    def step(self) -> None:
        """After every optimizer step."""

    def close(self, interrupted: bool) -> None:
        """At the end of the run; `interrupted`: stopped by a signal."""

    def fail(self) -> None:
        """Instead of `close` when training raised: end the tracked run as failed."""
        self.close(interrupted=True)


class Monitor:
    """Everything a run records; only the main process writes files or prints. Used as a
    context manager around the loop: a run that raises ends its trackers as failed."""

    def __init__(
        self,
        out_dir: Path,
        info: DistInfo,
        metrics: tuple[str, ...],
        samples_per_step: int,
        resume_step: int | None = None,
        trackers: list[Tracker] | None = None,
    ) -> None:
        self.info, self.samples_per_step = info, samples_per_step
        self.window = LossWindow()
        self.bar: Any = None
        self.metrics_file = None
        self.trackers = trackers or []
        if info.is_main:
            out_dir.mkdir(parents=True, exist_ok=True)
            columns = ("step", "epoch", "split", "loss", *metrics, "lr", "samples_per_sec")
            columns += ("data_wait",)  # share of the step time spent waiting for the next batch
            self.metrics_file = MetricsFile(out_dir / "metrics.csv", columns, resume_step)

    def record_config(self, path: Path, text: str, values: dict[str, Any]) -> None:
        if self.info.is_main:
            path.write_text(text, encoding="utf-8")
        for tracker in self.trackers:
            tracker.log_params(values)

    def progress(self, batches: Iterable[Any], total: int, desc: str) -> Iterator[Any]:
        """The batches of an epoch, timed, with a progress bar on a terminal (rank 0 only)."""
        timed = self.timed(batches)
        if not (self.info.is_main and sys.stderr.isatty()):
            return timed
        self.bar = tqdm(timed, total=total, desc=desc, leave=False, dynamic_ncols=True)
        return iter(self.bar)

    def timed(self, batches: Iterable[Any]) -> Iterator[Any]:
        """Yields the batches, adding the time spent waiting for each to the loss window.
        Host time around the loader's next() only: no device sync (a device that is the
        bottleneck makes the host wait elsewhere, in the step, not here)."""
        self.window.resume()
        start = time.perf_counter()
        iterator = iter(batches)  # (re)starts the epoch's loading: counted as waiting too
        for batch in iterator:
            self.window.waiting += time.perf_counter() - start
            yield batch
            start = time.perf_counter()
        self.window.waiting += time.perf_counter() - start
        self.window.pause()  # the epoch ended: evaluation and checkpoints are not step time

    def data_wait_share(self) -> float:
        """The share of the logged training time spent waiting for batches (0 if none)."""
        return self.window.waited / self.window.elapsed if self.window.elapsed else 0.0

    def record_step(self, loss: torch.Tensor, step: int) -> None:
        """After every optimizer step: keep the loss (on the device); tell the trackers."""
        self.window.add(loss, step)
        for tracker in self.trackers:
            tracker.step()

    def log_train(self, step: int, epoch: int, lr: float) -> LossSummary | None:
        """Summarise the losses since the last log into a metrics row (all ranks call it)."""
        summary = self.window.flush(self.samples_per_step, self.info)
        if summary is not None:
            row = {"loss": summary.loss, "samples_per_sec": summary.samples_per_sec, "lr": lr}
            self._write(step, epoch, "train", {**row, "data_wait": summary.data_wait})
            if self.bar is not None:
                self.bar.set_postfix(
                    loss=f"{summary.loss:.4f}",
                    samples_s=f"{summary.samples_per_sec:.0f}",
                    data_wait=f"{summary.data_wait:.0%}",
                )
        return summary

    def log_eval(self, step: int, epoch: int, epochs: int, result: dict[str, Any]) -> None:
        self._write(step, epoch, "val", result)
        if self.info.is_main:
            print(f"epoch {epoch}/{epochs} step {step}: {format_metrics(result)}")

    def close(self, interrupted: bool = False) -> None:
        for tracker in self.trackers:
            tracker.close(interrupted)

    def __enter__(self) -> Monitor:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is not None:  # the loop raised: it never reached close()
            for tracker in self.trackers:
                tracker.fail()

    def _write(self, step: int, epoch: int, split: str, row: dict[str, Any]) -> None:
        if self.metrics_file is None:
            return
        self.metrics_file.write({"step": step, "epoch": epoch, "split": split, **row})
        for tracker in self.trackers:
            tracker.log_metrics(split, row, step)


def format_metrics(values: dict[str, Any]) -> str:
    return " ".join(
        f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items()
    )
