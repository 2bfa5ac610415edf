"""train.profile (the profiler feature): profile a few training steps with torch.profiler."""

from __future__ import annotations

from pathlib import Path

import torch

from .monitor import Tracker


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
