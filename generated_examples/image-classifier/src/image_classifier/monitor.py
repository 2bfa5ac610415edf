"""What a run records: the resolved config, metrics.csv (and TensorBoard), a progress bar,
the training-loss window, the time spent waiting for data and the profiler.

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
    the host time spent waiting for batches in that interval.

    The clock pauses between epochs (evaluation and checkpoints at an epoch end are not
    training time); `waited` and `elapsed` also add up over the whole run."""

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
        bad = next(
            ((self.first_step + i, v) for i, v in enumerate(values) if not math.isfinite(v)), None
        )
        return LossSummary(
            loss=sum(finite) / len(finite) if finite else float("nan"),
            samples_per_sec=len(values) * samples_per_step / elapsed,
            data_wait=min(waiting / elapsed, 1.0),
            nonfinite=bad,
        )


class MetricsFile:
    """metrics.csv: one row per log interval (split "train") and per evaluation ("val").

    On resume the rows a crashed run wrote after the checkpoint are dropped, and so are
    damaged rows (with a warning); the file is rewritten through a temporary file, so a
    crash during the rewrite leaves the old file whole.
    """

    def __init__(self, path: Path, columns: tuple[str, ...], resume_step: int | None) -> None:
        self.path, self.columns = path, columns
        rows = []
        if resume_step is not None and path.exists():
            rows, damaged = _rows_up_to(path, resume_step)
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


def _rows_up_to(path: Path, last_step: int) -> tuple[list[dict[str, str]], int]:
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


class MlflowRecorder:
    """train.logger=mlflow: the resolved config as params, every metrics row as metrics,
    and best.pt, last.pt (or .dcp) and config.toml as artifacts, one MLflow run per out_dir.

    The store is MLFLOW_TRACKING_URI when set (a tracking server), else a SQLite database in
    mlruns/ of the working directory, with the artifacts beside it.
    """

    def __init__(self, out_dir: Path, run_id: str) -> None:
        try:
            from mlflow import MlflowClient
        except ImportError as exc:
            raise RuntimeError(
                "train.logger=mlflow needs mlflow: pip install -e '.[mlflow]'"
            ) from exc
        local = Path("mlruns").resolve()
        uri = os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{local / 'mlflow.db'}"
        if uri.startswith("sqlite:///"):
            Path(uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        self.out_dir, self.client = out_dir, MlflowClient(uri)
        if run_id and self._exists(run_id):  # a resumed run goes on in its MLflow run
            self.run_id = run_id
            self.client.update_run(run_id, status="RUNNING")
        else:
            experiment = self.client.get_experiment_by_name(__package__)
            if experiment is None:  # the artifacts beside the local store, not in the cwd
                artifacts = (local / "artifacts").as_uri()
                experiment_id = self.client.create_experiment(__package__, artifacts)
            else:
                experiment_id = experiment.experiment_id
            self.run_id = self.client.create_run(experiment_id, run_name=out_dir.name).info.run_id

    def _exists(self, run_id: str) -> bool:
        try:
            self.client.get_run(run_id)
        except Exception:  # MlflowException: not in this store (another tracking URI)
            return False
        return True

    def log_params(self, values: dict[str, Any]) -> None:
        """Once per key: MLflow refuses to change a param (a resumed run keeps the first)."""
        from mlflow.entities import Param

        logged = self.client.get_run(self.run_id).data.params
        flat = {"task": values["task"]} | {
            f"{section}.{key}": value
            for section in ("data", "model", "train")
            for key, value in values[section].items()
        }
        params = [Param(k, str(v)) for k, v in flat.items() if k not in logged]
        self.client.log_batch(self.run_id, params=params)

    def log_metrics(self, split: str, row: dict[str, Any], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [
            Metric(f"{split}/{key}", value, now, step)
            for key, value in row.items()
            if isinstance(value, float)
        ]
        self.client.log_batch(self.run_id, metrics=metrics)

    def close(self, interrupted: bool) -> None:
        for name in ("best.pt", "last.pt", "best.dcp", "last.dcp", "config.toml"):
            path = self.out_dir / name
            if path.is_dir():  # a sharded checkpoint (train.strategy=fsdp)
                self.client.log_artifacts(self.run_id, str(path), name)
            elif path.exists():
                self.client.log_artifact(self.run_id, str(path))
        self.client.set_terminated(self.run_id, "KILLED" if interrupted else "FINISHED")


class Monitor:
    """Everything a run records; only the main process writes files or prints."""

    def __init__(
        self,
        out_dir: Path,
        info: DistInfo,
        device: torch.device,
        metrics: tuple[str, ...],
        samples_per_step: int,
        resume_step: int | None = None,
        tensorboard: bool = False,
        profile: bool = False,
        mlflow_run_id: str | None = None,  # None: no MLflow; "": a new run; else continue it
    ) -> None:
        self.info, self.samples_per_step = info, samples_per_step
        self.window = LossWindow()
        self.bar: Any = None
        self.metrics_file = self.board = self.mlflow = None
        if info.is_main:
            out_dir.mkdir(parents=True, exist_ok=True)
            columns = ("step", "epoch", "split", "loss", *metrics, "lr", "samples_per_sec")
            columns += ("data_wait",)  # share of the step time spent waiting for the next batch
            self.metrics_file = MetricsFile(out_dir / "metrics.csv", columns, resume_step)
            self.board = _summary_writer(out_dir / "tensorboard") if tensorboard else None
            if mlflow_run_id is not None:
                self.mlflow = MlflowRecorder(out_dir, mlflow_run_id)
        self.profiler = StepProfiler(profile and info.is_main, out_dir, device)

    @property
    def mlflow_run_id(self) -> str:
        return self.mlflow.run_id if self.mlflow is not None else ""

    def record_config(self, path: Path, text: str, values: dict[str, Any]) -> None:
        if self.info.is_main:
            path.write_text(text, encoding="utf-8")
        if self.mlflow is not None:
            self.mlflow.log_params(values)

    def progress(self, batches: Iterable[Any], total: int, desc: str) -> Iterator[Any]:
        """The batches of an epoch, timed (`waited_for`), with a progress bar on an
        interactive terminal (main process only); silent otherwise."""
        timed = self.waited_for(batches)
        if not (self.info.is_main and sys.stderr.isatty()):
            return timed
        self.bar = tqdm(timed, total=total, desc=desc, leave=False, dynamic_ncols=True)
        return iter(self.bar)

    def waited_for(self, batches: Iterable[Any]) -> Iterator[Any]:
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
        """After every optimizer step: keep the loss (on the device) and advance the profiler."""
        self.window.add(loss, step)
        self.profiler.step()

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
        self.profiler.stop()
        if self.board is not None:
            self.board.close()
        if self.mlflow is not None:
            self.mlflow.close(interrupted)

    def _write(self, step: int, epoch: int, split: str, row: dict[str, Any]) -> None:
        if self.metrics_file is None:
            return
        self.metrics_file.write({"step": step, "epoch": epoch, "split": split, **row})
        if self.board is not None:
            for key, value in row.items():
                if isinstance(value, float):
                    self.board.add_scalar(f"{split}/{key}", value, step)
            self.board.flush()
        if self.mlflow is not None:
            self.mlflow.log_metrics(split, row, step)


def _summary_writer(log_dir: Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        raise RuntimeError(
            "train.logger=tensorboard needs tensorboard: pip install -e '.[tensorboard]'"
        ) from exc
    return SummaryWriter(str(log_dir))


def format_metrics(values: dict[str, Any]) -> str:
    return " ".join(
        f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items()
    )
