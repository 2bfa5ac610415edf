"""Why a run stops early: early stopping's test of an improvement, and stop signals.

SIGTERM and SIGUSR1 (what schedulers send before they preempt a job) and a first Ctrl-C
only set a flag; the loop reads it after every optimizer step (an evaluation after each
batch), writes last.pt and ends the run with EXIT_STATUS. A second Ctrl-C stops at once.
Under torchrun, signal torchrun: it passes the signal on to every process.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

import torch
import torch.distributed as dist

from .runtime import DistInfo
from .tasks import Task

STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGUSR1", "SIGINT") if hasattr(signal, name)
)
# 128 + the signal's number: what a shell reports for a process that signal ended, so
# schedulers and scripts see "interrupted" (last.pt holds the run; resume=auto goes on).
EXIT_STATUS = {sig.name: 128 + int(sig) for sig in STOP_SIGNALS}


def improves(task: Task, value: float, best: float | None, min_delta: float) -> bool:
    """Whether `value` of the metric that picks best.pt beats `best` by more than min_delta."""
    return best is None or (task.is_better(value, best) and abs(value - best) > min_delta)


class StopSignals:
    """The stop flag: set by a signal handler, read by the training loop at step boundaries."""

    def __init__(self, info: DistInfo) -> None:
        self.info = info
        self.received: signal.Signals | None = None
        # Under torchrun the flag is all-reduced every step; a gloo group keeps that a small
        # CPU message that never waits for the GPU (NCCL would).
        self.group = None
        if info.enabled and dist.get_backend() != "gloo":
            self.group = dist.new_group(backend="gloo")

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Catch the stop signals while the loop runs; the previous handlers come back after."""
        if threading.current_thread() is not threading.main_thread():
            yield  # Python delivers signals to the main thread only
            return
        previous = {sig: signal.signal(sig, self._handle) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt  # a second Ctrl-C: stop now, without a checkpoint
        self.received = signal.Signals(signum)

    def pending(self) -> bool:
        """Whether a stop signal came to this process (not agreed with the other ranks)."""
        return self.received is not None

    def agreed(self) -> str | None:
        """The signal that stops the run, agreed by every rank: all stop at the same step."""
        if not self.info.enabled:
            return self.received.name if self.received else None
        flag = torch.tensor([int(self.received or 0)])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self.group)
        return signal.Signals(int(flag.item())).name if flag.item() else None
