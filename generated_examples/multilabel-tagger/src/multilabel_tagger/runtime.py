"""Where and how the program runs: device, seeds, mixed precision, distributed setup."""

from __future__ import annotations

import atexit
import contextlib
import functools
import multiprocessing
import os
import random
import signal
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist

from .config import TrainConfig


@dataclass(frozen=True)
class DistInfo:
    """This process's place in a (possibly single-process) run."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def get_device(name: str = "auto", local_rank: int = 0) -> torch.device:
    """The one place that decides the device; the rest of the code is device-agnostic."""
    found = {"cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available()}
    if name == "auto":
        name = next((kind for kind, ok in found.items() if ok), "cpu")
    if not found.get(name, True):
        raise RuntimeError(
            f"train.device={name} but {name.upper()} is not available on this machine; "
            "--set train.device=auto picks what is"
        )
    return torch.device("cuda", local_rank) if name == "cuda" else torch.device(name)


def set_seed(seed: int, deterministic: bool = False) -> None:
    """Seed python, numpy and torch (all devices); optionally force deterministic kernels."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds every CUDA device
    torch.backends.cudnn.benchmark = not deterministic
    torch.backends.cudnn.deterministic = deterministic
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)


def seed_worker(worker_id: int) -> None:
    """DataLoader worker_init_fn: numpy/python seeds from the worker's torch seed. Workers
    ignore the stop signals (a Ctrl-C reaches the process group): the main process decides."""
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)
    for name in ("SIGINT", "SIGTERM", "SIGUSR1"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)


@functools.cache
def kill_workers_at_exit() -> None:
    """Kill the loader workers still running at exit: they ignore the SIGTERM that
    multiprocessing's own exit handler sends before it waits (registered later: runs first)."""
    atexit.register(_kill_workers)


def _kill_workers() -> None:
    if hasattr(signal, "SIGCHLD"):  # PyTorch's handler would report each kill as a failure
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for process in multiprocessing.active_children():
        if process.daemon:  # DataLoader workers; nothing else this program starts is
            process.kill()
            process.join()


@dataclass(frozen=True)
class Precision:
    """Autocast on the device's own type (never "cuda" hard-coded); a GradScaler for fp16."""

    device: torch.device
    enabled: bool
    dtype: torch.dtype
    scaler: torch.amp.GradScaler

    def autocast(self) -> contextlib.AbstractContextManager:
        if not self.enabled:  # a disabled torch.autocast still costs ~4 us a step to enter
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.dtype)


def autocast_dtype(device_type: str, bf16_supported: bool, requested: str = "auto") -> str:
    """train.amp_dtype as used. auto: bfloat16 where the device has it (CPU, CUDA GPUs from
    Ampere on), which needs no GradScaler; float16 on older CUDA GPUs."""
    if requested != "auto":
        return requested
    return "float16" if device_type == "cuda" and not bf16_supported else "bfloat16"


def precision(device: torch.device, train: TrainConfig) -> Precision:
    """train.amp, amp_dtype and matmul_precision (set for the process), "auto" resolved in
    `train`. Matmuls auto: TF32 on CUDA unless deterministic. A GradScaler for fp16 on CUDA."""
    cuda = device.type == "cuda"
    bf16 = cuda and torch.cuda.get_device_capability(device)[0] >= 8  # native: Ampere on
    train.amp_dtype = autocast_dtype(device.type, bf16, train.amp_dtype)
    if train.matmul_precision == "auto":
        train.matmul_precision = "high" if cuda and not train.deterministic else "highest"
    torch.set_float32_matmul_precision(train.matmul_precision)
    dtype = getattr(torch, train.amp_dtype)
    use_scaler = train.amp and cuda and dtype == torch.float16
    scaler = torch.amp.GradScaler(device.type, enabled=use_scaler)
    return Precision(device, train.amp, dtype, scaler)


@contextlib.contextmanager
def distributed(device_name: str) -> Iterator[tuple[DistInfo, torch.device]]:
    """Join the process group when launched by torchrun (else one process); leave it after."""
    env = os.environ
    if "RANK" not in env or "WORLD_SIZE" not in env:
        yield DistInfo(), get_device(device_name)
        return
    info = DistInfo(int(env["RANK"]), int(env["WORLD_SIZE"]), int(env.get("LOCAL_RANK", 0)))
    device = get_device(device_name, info.local_rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    try:
        yield info, device
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def barrier(info: DistInfo) -> None:
    if info.enabled:
        dist.barrier()


def all_reduce_sum(tensor: torch.Tensor, info: DistInfo) -> torch.Tensor:
    """Sum a tensor over all ranks (a no-op for a single process)."""
    if info.enabled:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor
