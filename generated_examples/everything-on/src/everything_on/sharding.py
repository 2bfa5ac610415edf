"""train.strategy=fsdp: shard the model over the processes (FSDP2) and checkpoint it in
shards (torch.distributed.checkpoint, "DCP").

Under DDP every process holds the whole model, its gradients and its optimizer state;
under FSDP each holds 1/N of them and gathers a block's full weights only while that
block runs. Each model declares its repeated blocks (`repeated_blocks()` in its own
file): they are sharded one by one, then the root takes the rest, so one block at a time
is whole in memory. A model without the method is sharded as one unit.

torch.compile works on the sharded model, with a graph break at each block's hooks
(PyTorch traces FSDP's collectives into one graph only with compiled autograd, not used
here).

A sharded checkpoint is a directory: DCP's files (model and optimizer, one file per
process) plus `state.pt` (the rest of the training state, written by rank 0). DCP loads
it at any number of processes, resharding as needed, also in one plain process.

The strategy, step by step (DDP's is the plain code these replace): wrap is `shard_model`
(build_run calls it), no_sync is `no_gradient_sync` (engine.py's no_sync), save is
`save_sharded` (train.py's save), load is `DCPCheckpoints`, consolidate is consolidate.py.
Imports go one way: this module builds on checkpoint.py, and checkpoint.py reaches the
sharded format only through its table of formats, `FORMATS`, which this module fills when
imported (train.py and engine.py import it, so does every command that loads a run).

FSDP and DCP are imported where they are used: together ~0.8 s and ~45 MB that a run
without them does not pay.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist
from torch import nn

if TYPE_CHECKING:
    from torch.distributed.fsdp import FSDPModule

from .checkpoint import (
    FORMATS,
    CheckpointError,
    CheckpointFormat,
    clean_state_dict,
    save_checkpoint,
    warn_stderr,
    write_failure,
)
from .config import ConfigError
from .runtime import DistInfo, Precision, barrier

SHARDED_KEYS = ("epoch", "step", "config")  # state.pt of a sharded checkpoint; DCP holds the rest
STATE_FILE = "state.pt"  # in a sharded checkpoint: everything but the model and optimizer


def shard_model(model: nn.Module, amp: Precision, device: torch.device) -> None:
    """Shard `model` (built in host memory) in place over all processes, moving each unit
    to `device` as it is sharded: each repeated block, then the root. With train.amp the
    weights are gathered in amp's dtype (half the traffic and memory of float32) and
    gradients reduced in float32; autocast still runs as in one process, for the ops
    that need float32 (and for a float32 tensor meeting a low-precision weight)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    if amp.scaler.is_enabled():  # float16 on CUDA
        raise ConfigError(
            "train.strategy=fsdp needs --set train.amp_dtype=bfloat16 with train.amp: the "
            "float16 GradScaler checks for overflow in each process's shards alone"
        )
    policy = MixedPrecisionPolicy()
    if amp.enabled:
        policy = MixedPrecisionPolicy(param_dtype=amp.dtype, reduce_dtype=torch.float32)
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    blocks = model.repeated_blocks() if hasattr(model, "repeated_blocks") else []
    for block in blocks:
        fully_shard(block, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)


def is_sharded(model: nn.Module) -> bool:
    fsdp = sys.modules.get("torch.distributed.fsdp")  # not imported: nothing is sharded
    return fsdp is not None and isinstance(model, fsdp.FSDPModule)


@contextlib.contextmanager
def no_gradient_sync(model: FSDPModule) -> Iterator[None]:
    """Keep this batch's gradients unsharded and local (FSDP's no_sync): they are
    reduce-scattered, summed with these, by the last batch of the optimizer step."""
    model.set_requires_gradient_sync(False)
    try:
        yield
    finally:
        model.set_requires_gradient_sync(True)


def spare_forwards(model: nn.Module, batches: int, info: DistInfo, device: torch.device) -> int:
    """Forward passes this rank must add so that it runs as many as the busiest rank: each
    forward of a sharded model all-gathers weights, which every rank must join."""
    if not (info.enabled and is_sharded(model)):
        return 0
    most = torch.tensor([batches], device=device)  # NCCL reduces device tensors only
    dist.all_reduce(most, op=dist.ReduceOp.MAX)
    return int(most.item()) - batches


def all_finite(model: nn.Module, info: DistInfo) -> bool:
    """Whether every process's shards of the weights are finite (all ranks agree)."""
    local = list(model.parameters())
    if is_sharded(model):
        from torch.distributed.tensor import DTensor

        local = [p.to_local() if isinstance(p, DTensor) else p for p in local]
    count = sum(not bool(t.isfinite().all()) for t in local)
    bad = torch.tensor([count], device=local[0].device)  # NCCL reduces device tensors only
    if info.enabled:
        dist.all_reduce(bad)
    return int(bad.item()) == 0


def write_shards(directory: Path, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """Every rank writes its shards of the model and optimizer into `directory`."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    model_state, optimizer_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optimizer": optimizer_state}
    with _single_process_quiet():
        dcp.save(state, checkpoint_id=directory, no_dist=not dist.is_initialized())


def load_sharded(
    directory: Path, model: nn.Module, optimizer: torch.optim.Optimizer | None = None
) -> None:
    """Load the model (and optimizer) state of a sharded checkpoint into `model`, sharded
    or not, at any number of processes: DCP reads the parts this process holds."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.api import CheckpointException
    from torch.distributed.checkpoint.state_dict import (
        get_model_state_dict,
        get_optimizer_state_dict,
        set_model_state_dict,
        set_optimizer_state_dict,
    )

    state = {"model": get_model_state_dict(model)}
    if optimizer is not None:
        state["optimizer"] = get_optimizer_state_dict(model, optimizer)
    try:
        with _single_process_quiet():
            dcp.load(state, checkpoint_id=directory, no_dist=not dist.is_initialized())
    except CheckpointException as exc:  # a BaseException: re-raised as an ordinary error
        raise RuntimeError(str(exc).strip().splitlines()[0]) from None
    set_model_state_dict(model, state["model"])
    if optimizer is not None:
        set_optimizer_state_dict(model, optimizer, state["optimizer"])


def load_full(
    model: nn.Module,
    model_state: dict[str, Any],
    optimizer: torch.optim.Optimizer | None = None,
    optimizer_state: dict[str, Any] | None = None,
) -> None:
    """Load a one-file checkpoint (whole tensors; the optimizer's state keyed by position,
    as `Optimizer.state_dict()` writes it) into a sharded model: each rank keeps its part.
    The optimizer is built as when the file was written, so positions match in order."""
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        set_model_state_dict,
        set_optimizer_state_dict,
    )

    whole = StateDictOptions(full_state_dict=True)
    set_model_state_dict(model, model_state, options=whole)
    if optimizer is None or optimizer_state is None:
        return
    names = {param: name for name, param in model.named_parameters()}
    by_name: dict[str, Any] = {"state": {}, "param_groups": []}
    state = optimizer_state["state"]
    for saved, live in zip(optimizer_state["param_groups"], optimizer.param_groups, strict=True):
        keys = [names[param] for param in live["params"]]
        by_name["param_groups"].append({**saved, "params": keys})
        positions = zip(saved["params"], keys, strict=True)
        by_name["state"].update({key: state[i] for i, key in positions if i in state})
    set_optimizer_state_dict(model, optimizer, by_name, options=whole)


class DCPCheckpoints(CheckpointFormat):
    """A sharded checkpoint directory (.dcp), and any checkpoint into a sharded model, as
    checkpoint.py reads them (`FORMATS[".dcp"]`)."""

    required = SHARDED_KEYS

    def state_file(self, path: Path) -> Path:
        if not (path / ".metadata").is_file():
            raise CheckpointError(f"{path}: not a sharded checkpoint (no .metadata)")
        return path / STATE_FILE

    def owns(self, path: str | Path, model: nn.Module) -> bool:
        return Path(path).is_dir() or is_sharded(model)

    def load(
        self,
        model: nn.Module,
        checkpoint: dict[str, Any],
        path: str | Path,
        optimizer: torch.optim.Optimizer | None,
    ) -> None:
        if Path(path).is_dir():
            load_sharded(Path(path), model, optimizer)
        else:
            weights = clean_state_dict(checkpoint["model_state_dict"])
            load_full(model, weights, optimizer, checkpoint["optimizer_state_dict"])


FORMATS[".dcp"] = DCPCheckpoints()


def save_sharded(
    path: Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    state: dict[str, Any],
    info: DistInfo,
) -> bool:
    """Every rank writes its shards into a temporary directory; rank 0 adds state.pt and
    renames it to `path`. Unless the weights hold NaN/inf: the last good one then stays."""
    if not all_finite(model, info):
        if info.is_main:
            warn_stderr(
                f"warning: not saving {path}: non-finite weights at step {state['step']}; "
                "the previous checkpoint is kept"
            )
        return False
    tmp = path.with_name(f".{path.name}.tmp")  # the same name on every rank
    if info.is_main:
        shutil.rmtree(tmp, ignore_errors=True)  # a killed run's leftovers
    barrier(info)
    try:
        write_shards(tmp, model, optimizer)
        if info.is_main:
            save_checkpoint(tmp / STATE_FILE, state)
            _replace_directory(tmp, path)
    except (OSError, RuntimeError) as exc:
        raise CheckpointError(
            f"cannot write {path}: {write_failure(exc, path.parent)}; the previous one is kept"
        ) from None
    return True


def _replace_directory(new: Path, path: Path) -> None:
    """Put the complete directory `new` at `path`. A directory cannot replace another in
    one rename: the old one moves aside first, so a crash between the two renames leaves
    no `path` (resume=auto then takes the newest step checkpoint, or best), never half."""
    old = path.with_name(f".{path.name}.old.tmp")
    if path.exists():
        shutil.rmtree(old, ignore_errors=True)
        os.replace(path, old)
    os.replace(new, path)
    shutil.rmtree(old, ignore_errors=True)
    if sys.platform != "win32":  # make the renames durable
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _single_process_quiet() -> Iterator[None]:
    # DCP warns on every call that it "assumes" one process when no group is initialised;
    # here that is the intent (train.strategy=fsdp in one process, consolidate, evaluate).
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        yield
