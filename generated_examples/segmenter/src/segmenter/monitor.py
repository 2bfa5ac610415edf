"""What a run records: the resolved config, metrics.csv, a progress bar and the training-loss
window.

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
    nonfinite: tuple[int, float] | None = None  # (step, value) of the first NaN/inf loss


class LossWindow:
    """Per-step losses on the device, read back once per log; paused between epochs."""

    def __init__(self) -> None:
        self.losses: list[torch.Tensor] = []
        self.first_step = 0
        self.started = time.perf_counter()
        self.paused_at: float | None = None

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
        values = (all_reduce_sum(losses, info) / info.world_size).cpu().tolist()  # one sync
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        self.losses, self.started = [], time.perf_counter()
        finite = [v for v in values if math.isfinite(v)]
        bad = [(self.first_step + i, v) for i, v in enumerate(values) if not math.isfinite(v)]
        return LossSummary(
            loss=sum(finite) / len(finite) if finite else float("nan"),
            samples_per_sec=len(values) * samples_per_step / elapsed,
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


class Monitor:
    """Everything a run records; only the main process writes files or prints."""

    def __init__(
        self,
        out_dir: Path,
        info: DistInfo,
        metrics: tuple[str, ...],
        samples_per_step: int,
        resume_step: int | None = None,
    ) -> None:
        self.info, self.samples_per_step = info, samples_per_step
        self.window = LossWindow()
        self.bar: Any = None
        self.metrics_file = None
        if info.is_main:
            out_dir.mkdir(parents=True, exist_ok=True)
            columns = ("step", "epoch", "split", "loss", *metrics, "lr", "samples_per_sec")
            self.metrics_file = MetricsFile(out_dir / "metrics.csv", columns, resume_step)

    def record_config(self, path: Path, text: str, values: dict[str, Any]) -> None:
        if self.info.is_main:
            path.write_text(text, encoding="utf-8")

    def progress(self, batches: Iterable[Any], total: int, desc: str) -> Iterator[Any]:
        """The batches of an epoch, timed, with a progress bar on a terminal (rank 0 only)."""
        timed = self.timed(batches)
        if not (self.info.is_main and sys.stderr.isatty()):
            return timed
        self.bar = tqdm(timed, total=total, desc=desc, leave=False, dynamic_ncols=True)
        return iter(self.bar)

    def timed(self, batches: Iterable[Any]) -> Iterator[Any]:
        """Yields the batches while the loss window's clock runs (not between epochs)."""
        self.window.resume()
        yield from batches
        self.window.pause()  # the epoch ended: evaluation and checkpoints are not step time

    def record_step(self, loss: torch.Tensor, step: int) -> None:
        """After every optimizer step: keep the loss (on the device)."""
        self.window.add(loss, step)

    def log_train(self, step: int, epoch: int, lr: float) -> LossSummary | None:
        """Summarise the losses since the last log into a metrics row (all ranks call it)."""
        summary = self.window.flush(self.samples_per_step, self.info)
        if summary is not None:
            row = {"loss": summary.loss, "samples_per_sec": summary.samples_per_sec, "lr": lr}
            self._write(step, epoch, "train", row)
            if self.bar is not None:
                self.bar.set_postfix(
                    loss=f"{summary.loss:.4f}", samples_s=f"{summary.samples_per_sec:.0f}"
                )
        return summary

    def log_eval(self, step: int, epoch: int, epochs: int, result: dict[str, Any]) -> None:
        self._write(step, epoch, "val", result)
        if self.info.is_main:
            print(f"epoch {epoch}/{epochs} step {step}: {format_metrics(result)}")

    def _write(self, step: int, epoch: int, split: str, row: dict[str, Any]) -> None:
        if self.metrics_file is not None:  # on the main process
            self.metrics_file.write({"step": step, "epoch": epoch, "split": split, **row})


def format_metrics(values: dict[str, Any]) -> str:
    return " ".join(
        f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items()
    )
