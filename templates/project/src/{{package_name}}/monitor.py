"""What a run reports: a progress bar, metrics.csv, and the non-finite loss guard."""

from __future__ import annotations

import csv
import math
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

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

    def flush(self, batch_size: int, on_nonfinite: str) -> dict[str, float] | None:
        """Mean loss and throughput since the last flush; raises on a NaN/inf loss."""
        if not self.losses:
            return None
        values = torch.stack(self.losses).float().cpu().tolist()  # the one sync per interval
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        count = len(values)
        self.losses, self.started = [], time.perf_counter()
        bad = [i for i, v in enumerate(values) if not math.isfinite(v)]
        if bad:
            message = f"non-finite loss ({values[bad[0]]}) at step {self.first_step + bad[0]}"
            if on_nonfinite == "stop":
                raise NonFiniteLossError(message + "; stopping (train.on_nonfinite=warn continues)")
            print(f"warning: {message}", file=sys.stderr)
        finite = [v for v in values if math.isfinite(v)]
        return {
            "loss": sum(finite) / len(finite) if finite else float("nan"),
            "samples_per_sec": count * batch_size / elapsed,
        }


class MetricsFile:
    """metrics.csv in out_dir: one row per log interval (train) and per evaluation (val)."""

    def __init__(self, path: Path, resume_step: int | None, enabled: bool) -> None:
        self.path, self.enabled = path, enabled
        if not enabled:
            return
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


def progress(batches: Iterable[Any], total: int, desc: str, enabled: bool) -> Iterator[Any] | tqdm:
    """A progress bar on an interactive terminal (main process only); silent otherwise."""
    if not (enabled and sys.stderr.isatty()):
        return iter(batches)
    return tqdm(batches, total=total, desc=desc, leave=False, dynamic_ncols=True)


def format_metrics(values: dict[str, Any]) -> str:
    return " ".join(
        f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items()
    )
