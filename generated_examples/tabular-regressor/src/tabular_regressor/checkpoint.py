"""Checkpoints: full training state, atomic writes, safe (`weights_only=True`) loads.

A checkpoint is one file (`last.pt`) written under a temporary name and then renamed: a crash
never leaves half a checkpoint under a name that resume=auto would pick.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import random
import re
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import provenance
from .config import TASK, flatten
from .models import unwrap
from .tasks import DataSpec

REQUIRED_KEYS = ("model_state_dict", "optimizer_state_dict", "epoch", "step", "config")
SUFFIXES = (".pt",)
_WRAPPER_PREFIX = re.compile(r"^(?:_orig_mod\.|module\.)+")


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used; the message names the file and the reason."""


@dataclass
class TrainState:
    """Where training is; saved in every checkpoint."""

    epoch: int = 0  # current epoch, counted from 0
    step: int = 0  # optimizer steps done so far
    batch_in_epoch: int = 0  # batches of the current epoch already trained on
    best_metric: float | None = None  # best validation metric so far
    # early stopping: the last value that improved by more than train.early_stopping_min_delta
    patience_best: float | None = None
    evals_without_improvement: int = 0
    best_scores: dict[str, Any] | None = None  # validation metrics of the best model (best.pt)

    def position(self) -> str:
        """Where the run is, numbered as its log lines are (epochs from 1)."""
        if self.epoch and not self.batch_in_epoch:  # between two epochs
            return f"the end of epoch {self.epoch}, step {self.step}"
        return f"epoch {self.epoch + 1}, step {self.step}"


def clean_state_dict(state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Drop torch.compile (`_orig_mod.`) and DDP (`module.`) prefixes from every key."""
    return {_WRAPPER_PREFIX.sub("", key): value for key, value in state_dict.items()}


def rng_state() -> dict[str, Any]:
    """Every RNG the training run draws from, in types `weights_only` loads accept."""
    np_state = np.random.get_state(legacy=False)
    state = {
        "python": random.getstate(),
        "numpy_key": torch.from_numpy(np_state["state"]["key"].astype(np.int64)),
        "numpy_pos": int(np_state["state"]["pos"]),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    key = state["numpy_key"].numpy().astype(np.uint32)
    np_state = {"key": key, "pos": state["numpy_pos"]}
    np.random.set_state(
        {"bit_generator": "MT19937", "state": np_state, "has_gauss": 0, "gauss": 0.0}
    )
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> None:
    """Write atomically (a temp file, fsync, os.replace): never half a file, at any crash."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            torch.save(payload, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except (OSError, RuntimeError) as exc:  # torch.save reports a full disk as RuntimeError
        raise CheckpointError(
            f"cannot write {path}: {write_failure(exc, path.parent)}; the previous file is kept"
        ) from None
    finally:
        tmp.unlink(missing_ok=True)
    if sys.platform != "win32":  # make the rename itself durable
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_failure(exc: BaseException, folder: Path) -> str:
    """Why a write failed, in words: a full disk is named as such, whatever raised it."""
    full = isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)
    with contextlib.suppress(OSError):
        full = full or os.statvfs(folder).f_bavail == 0
    if full:
        return "no space left on the device"
    text = str(exc).strip().splitlines()
    return getattr(exc, "strerror", None) or (text[0] if text else type(exc).__name__)


def warn_stderr(message: str) -> None:
    print(message, file=sys.stderr)


def save_if_finite(path: str | Path, payload: dict[str, Any]) -> bool:
    """save_checkpoint, unless the weights hold NaN/inf: the last good file then stays."""
    weights = payload["model_state_dict"].items()
    bad = [k for k, v in weights if v.is_floating_point() and not bool(v.isfinite().all())]
    if bad:
        warn_stderr(
            f"warning: not saving {path}: non-finite weights at step {payload['step']} "
            f"({bad[0]}); the previous checkpoint is kept"
        )
        return False
    save_checkpoint(path, payload)
    return True


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load with `weights_only=True`; any damaged or foreign file raises CheckpointError."""
    path, required = Path(path), REQUIRED_KEYS
    checkpoint = load_weights_only(path, map_location)
    if not isinstance(checkpoint, dict) or any(k not in checkpoint for k in required):
        raise CheckpointError(
            f"{path}: not a training checkpoint of this project "
            f"(needs keys {', '.join(required)})"
        )
    if (task := checkpoint["config"].get("task", TASK)) != TASK:
        raise CheckpointError(f"{path}: a checkpoint of task {task}; this project learns {TASK}")
    return checkpoint


def load_weights_only(path: Path, map_location: str | torch.device = "cpu") -> Any:
    """`torch.load(weights_only=True)`: never arbitrary objects; a bad file is named."""
    if path.is_dir():  # a run's folder: a file in it was meant
        raise CheckpointError(f"{path} is a folder; pass a checkpoint in it: {path / 'best.pt'}")
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    if path.stat().st_size == 0:
        raise CheckpointError(f"{path}: file is empty (0 bytes)")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises several types for damaged files
        text = str(exc)
        if "Unsupported global" in text:  # a pickle of arbitrary objects: never run it
            reason = "it needs arbitrary unpickling (not a weights-only checkpoint); refused"
        elif "Weights only load failed" in text or not text.strip():
            reason = "damaged, or not a checkpoint at all"
        else:
            reason = text.strip().splitlines()[0]
        raise CheckpointError(f"{path}: not a readable checkpoint ({reason})") from None


def is_checkpoint(path: Path) -> bool:
    """Whether a file holds a checkpoint by its content, whatever its name: torch.save's zip
    archive or pickle, or safetensors (8 bytes of header size, then its JSON)."""
    with open(path, "rb") as handle:
        head = handle.read(9)
    pickle = head[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
    header = int.from_bytes(head[:8], "little")
    if pickle or (head[8:9] == b"{" and header + 8 <= path.stat().st_size):
        return True
    with contextlib.suppress(zipfile.BadZipFile), zipfile.ZipFile(path) as archive:
        return any(name.endswith("/data.pkl") for name in archive.namelist())
    return False


def load_model_state(
    model: torch.nn.Module,
    checkpoint: dict[str, Any],
    path: str | Path,
    config: dict[str, Any],
) -> None:
    """Load the weights into the plain module under any torch.compile or DDP wrapper; a
    mismatch names the config keys that differ."""
    try:
        unwrap(model).load_state_dict(clean_state_dict(checkpoint["model_state_dict"]))
    except (RuntimeError, ValueError, KeyError) as exc:
        saved = checkpoint.get("config", {})
        changed = [
            f"{section}.{key} {saved[section][key]!r} -> {value!r}"
            for section in ("model", "data")
            for key, value in config.get(section, {}).items()
            if key in saved.get(section, {}) and saved[section][key] != value
        ]
        hint = f"; config changed: {', '.join(changed)}" if changed else ""
        raise CheckpointError(f"{path}: weights do not fit this model{hint}") from exc


def step_checkpoints(out_dir: Path) -> list[Path]:
    """Step checkpoints, newest first."""
    found = [path for suffix in SUFFIXES for path in out_dir.glob(f"step-*{suffix}")]
    return sorted(found, key=lambda path: path.stem, reverse=True)


def named_checkpoints(out_dir: Path, stem: str) -> list[Path]:
    """out_dir/STEM.pt if there, newest first."""
    found = [path for path in (out_dir / f"{stem}{suffix}" for suffix in SUFFIXES) if path.exists()]
    return sorted(found, key=lambda path: path.stat().st_mtime, reverse=True)


def remove_checkpoint(path: Path) -> None:
    path.unlink(missing_ok=True)


def prune_step_checkpoints(out_dir: Path, keep_last: int) -> None:
    for old in step_checkpoints(out_dir)[max(keep_last, 0) :]:
        remove_checkpoint(old)


def training_payload(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any]
) -> dict[str, Any]:
    """The weights, the optimizer and `state` (`training_state`): all a resume needs."""
    weights = clean_state_dict(model.state_dict())
    return {"model_state_dict": weights, "optimizer_state_dict": optimizer.state_dict(), **state}


def training_state(
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    scaler: torch.amp.GradScaler,
    state: TrainState,
    config: dict[str, Any],
    data_state: dict[str, Any],
    data_spec: DataSpec,
    model_build: dict[str, Any],
    world_size: int,
) -> dict[str, Any]:
    """All but the model and optimizer, and what rebuilds the model alone."""
    return {
        "scheduler_state_dict": scheduler.state_dict(),
        "scaler_state_dict": scaler.state_dict(),
        **asdict(state),  # epoch, step, batch_in_epoch, best_metric, ...
        "rng_state": rng_state(),
        "config": config,
        "data_state": data_state,
        "data_spec": dataclasses.asdict(data_spec),
        "model_build": model_build,
        "world_size": world_size,
        "provenance": provenance.record(config),  # code, command, data, software, times
    }


def restore_training(
    checkpoint: dict[str, Any],
    path: str | Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    scaler: torch.amp.GradScaler,
    config: dict[str, Any],
    world_size: int = 1,
) -> TrainState:
    """Load every state into the live objects; returns where training was."""
    check_global_batch(checkpoint, path, config["train"]["batch_size"], world_size)
    load_model_state(model, checkpoint, path, config)
    try:
        optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
        scheduler.load_state_dict(checkpoint["scheduler_state_dict"])
        if checkpoint["scaler_state_dict"]:  # empty if saved without one (bfloat16, amp off)
            scaler.load_state_dict(checkpoint["scaler_state_dict"])
        set_rng_state(checkpoint["rng_state"])
    except (KeyError, ValueError, RuntimeError, TypeError) as exc:
        raise CheckpointError(f"{path}: training state does not fit this run ({exc})") from exc
    names = [f.name for f in fields(TrainState)]
    state = TrainState(**{k: checkpoint[k] for k in names if k in checkpoint})  # older: fewer
    if checkpoint["config"].get("train", {}).get("monitor") != config["train"]["monitor"]:
        # another train.monitor: its best (and early stopping's count) start afresh
        state.best_metric = state.patience_best = None
        state.evals_without_improvement = 0
    return state


def check_global_batch(
    checkpoint: dict[str, Any], path: str | Path, batch_size: int, world_size: int
) -> None:
    """Mid-epoch, only the same batch_size x processes (2 x 8 = 1 x 16) continues exactly."""
    saved_batch = checkpoint["config"].get("train", {}).get("batch_size", 0)
    saved = saved_batch * checkpoint.get("world_size", 1)
    mid_epoch = checkpoint.get("batch_in_epoch", 0) and saved_batch
    if not mid_epoch or saved == batch_size * world_size:
        return
    if saved % world_size == 0:
        fix = f"keep it with --set train.batch_size={saved // world_size}"
    else:
        fix = f"keep it with a number of processes that divides {saved}"
    raise CheckpointError(
        f"{path}: saved mid-epoch with a global batch (train.batch_size x processes) of "
        f"{saved}, now {batch_size * world_size}; {fix}, or resume from an epoch-end checkpoint"
    )


# Settings a resumed run cannot take a new value of: the restored optimizer and schedule
# hold the old one, or the rest of the run would draw other samples. Any other change is
# applied, and said (`resume_changes`).
KEPT_ON_RESUME = {
    "train.lr": "the restored optimizer and schedule hold the learning rate",
    "train.weight_decay": "the restored optimizer holds it",
    "train.scheduler": "the restored schedule is of that kind",
    "train.warmup_steps": "the restored schedule holds it",
    "train.grad_accum_steps": "the restored schedule counts optimizer steps of that many batches",
    "train.seed": "the rest of the run's data order and random draws follow it",
    "data.val_fraction": "it moves rows between the training and validation splits",
}


def resume_changes(saved: dict[str, Any], config: dict[str, Any], path: str | Path) -> list[str]:
    """The settings changed since the checkpoint (applied) or gone from the project (a removed
    feature's); KEPT_ON_RESUME ones refused."""
    before, now = dict(flatten(saved)), dict(flatten(config))
    changed = [k for k, v in now.items() if k in before and before[k] != v and k != "train.resume"]
    refused = [key for key in changed if key in KEPT_ON_RESUME]
    if refused:
        why = "; ".join(
            f"{key} {before[key]!r} -> {now[key]!r} ({KEPT_ON_RESUME[key]})" for key in refused
        )
        keep = " ".join(f"--set {key}={as_setting(before[key])}" for key in refused)
        raise CheckpointError(
            f"{path}: cannot resume with {why}; keep the run's with {keep}, or train anew "
            "with --set train.out_dir=ANOTHER_DIR"
        )
    said = [f"{key}: {before[key]!r} -> {now[key]!r}" for key in changed]
    gone = [key for key in before if key not in now]  # a removed feature's: its state is lost
    return said + [f"{key}: {before[key]!r} -> gone (no such setting now)" for key in gone]


def as_setting(value: Any) -> str:
    """A value as --set writes it: true/false, numbers as Python prints them, bare words."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str) and (not value or not value.replace("_", "").isalnum()):
        return repr(value).replace("'", '"') if value else '""'
    return str(value)


def resolve_resume(
    choice: str, out_dir: Path, is_main: bool = True
) -> tuple[Path, dict[str, Any]] | None:
    """train.resume: "" fresh (never over a run), a path, or auto: the newest checkpoint that
    loads (last, then step checkpoints, then best), never afresh over a damaged run."""
    if choice == "":
        if named_checkpoints(out_dir, "last"):
            raise CheckpointError(
                f"{out_dir} already holds a run; continue it with --set train.resume=auto "
                "or choose another --set train.out_dir=..."
            )
        return None
    if choice != "auto":
        return Path(choice), load_checkpoint(choice)
    warn = warn_stderr if is_main else lambda _: None
    newest = [*named_checkpoints(out_dir, "last"), *step_checkpoints(out_dir)]
    for path in [*newest, *named_checkpoints(out_dir, "best")]:
        try:
            checkpoint = load_checkpoint(path)  # one at a time: only one is held in memory
        except CheckpointError as exc:
            warn(f"warning: skipping damaged checkpoint {exc}")
            continue
        if path not in newest:
            warn(f"warning: resuming from {path} (step {checkpoint['step']}): nothing newer loads")
        return path, checkpoint
    damaged = sorted(p.name for suffix in SUFFIXES for p in out_dir.glob(f"*{suffix}"))
    if damaged:
        raise CheckpointError(
            f"{out_dir} holds a run but none of its checkpoints loads ({', '.join(damaged)}); "
            "move them away to start afresh there, or resume from a file with "
            "--set train.resume=PATH"
        )
    if is_main:
        print(f"no checkpoint in {out_dir}; starting a fresh run")
    return None


@contextlib.contextmanager
def run_lock(out_dir: Path) -> Iterator[None]:
    """Hold out_dir for this run (flock: it dies with the process); a second run is refused,
    naming this one's PID. Temporary files that killed writers left are removed."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock; runs are not guarded there
        yield
        return
    choose = "choose another --set train.out_dir=..."
    if out_dir.exists() and not out_dir.is_dir():
        raise CheckpointError(f"train.out_dir {out_dir} is a file, not a folder; {choose}")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        handle = open(out_dir / ".lock", "a+", encoding="utf-8")
    except OSError as exc:  # a read-only folder, no permission: named as the setting
        raise CheckpointError(
            f"cannot write train.out_dir {out_dir}: {exc.strerror or exc}; {choose}"
        ) from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise CheckpointError(
                f"{out_dir} is in use by a running training (PID {holder}); wait for it or "
                f"{choose}"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        for stale in out_dir.glob(".*.tmp"):  # no other writer can be alive now
            remove_checkpoint(stale)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
