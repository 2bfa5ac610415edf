"""The profiler feature: where a run's time goes.

Every run records the share of its step time spent waiting for the next batch (`data_wait`
in metrics.csv and the progress bar, measured by monitor.py) and ends with one line of
advice when data was the bottleneck (`advise_on_data`); `train.profile=true` also profiles
a few training steps with torch.profiler (`StepProfiler`).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch.utils.data import DataLoader

from .data import in_memory, worker_count
from .monitor import Tracker

DATA_BOUND = 0.2  # a larger share of step time waiting for batches: data is the bottleneck
ADVICE_STEPS = 10  # fewer steps measure the loader's start (its first batch), not its pace


def advise_on_data(share: float, steps: int, loader: DataLoader, batch_size: int) -> None:
    """Print `data_advice` when the steps spent more than DATA_BOUND of their time waiting."""
    if steps >= ADVICE_STEPS and share > DATA_BOUND:
        print(data_advice(share, loader, batch_size))


def data_advice(share: float, loader: DataLoader, batch_size: int) -> str:
    """One line for a run whose steps waited for data: a change that helps this dataset."""
    waited = f"data: the training steps spent {share:.0%} of their time waiting for batches"
    if in_memory(loader.dataset):  # workers would only copy tensors already in memory
        return (
            f"{waited}, each fetched from memory at once, so the steps are short: give each "
            f"more work, e.g. --set train.batch_size={batch_size * 4}"
        )
    if loader.num_workers == 0 and worker_count("auto", loader.dataset) > 0:
        return f"{waited}; load them in parallel: --set data.num_workers=auto (or a number)"
    if loader.num_workers == 0:
        return f"{waited}; no loader workers can run here (cores, processes): make samples cheaper"
    return (
        f"{waited} with data.num_workers={loader.num_workers}; raise it while cores are idle "
        f"(--set data.num_workers={loader.num_workers + 1}), else make each sample cheaper"
    )


class StepProfiler(Tracker):
    """train.profile: a torch.profiler window over a few steps, a trace file and the top ops.

    On CUDA it also reports peak memory and `torch.cuda.memory_summary()`.
    """

    def __init__(self, out_dir: Path, device: torch.device) -> None:
        self.out_dir, self.device = out_dir, device
        self.profiler: torch.profiler.profile | None = None
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

    def close(self, interrupted: bool) -> None:
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
