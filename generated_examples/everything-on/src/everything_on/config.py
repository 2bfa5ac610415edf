"""Typed configuration: dataclasses, TOML files and `--set section.key=value` overrides."""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """A config file or override that cannot be used; the message says why."""


@dataclass
class DataConfig:
    name: str = "image_folder"  # dataset component: a module in data/
    root: str = ""  # dataset location; empty means synthetic data where supported
    num_workers: int = 0  # DataLoader worker processes (0 loads in the main process)
    val_fraction: float = 0.2  # share held out for validation when root has no split
    target: str = ""  # csv/text files: the label column (empty: the last column)
    image_size: int = 32  # images are resized to image_size x image_size
    num_classes: int = 10  # synthetic data: number of classes
    num_samples: int = 512  # synthetic data: training samples (validation gets a quarter)
    max_length: int = 64  # sequences: longest token sequence kept
    vocab_size: int = 1000  # sequences: vocabulary size (synthetic) or cap (text)
    num_features: int = 8  # synthetic tabular data: input features
    bucket_by_length: bool = False  # sequences: batch similar lengths to cut padding


@dataclass
class ModelConfig:
    name: str = "resnet"  # model component: a module in models/
    width: int = 32  # channels / hidden size of the first block
    depth: int = 2  # number of repeated blocks
    dropout: float = 0.1  # dropout before the output layer
    grad_checkpointing: bool = True  # recompute blocks in backward


@dataclass
class TrainConfig:
    epochs: int = 10  # passes over the training set
    max_steps: int = 0  # stop after this many optimiser steps when > 0
    batch_size: int = 32  # per process; effective batch = batch_size * world size
    lr: float = 1e-3  # peak learning rate (AdamW)
    weight_decay: float = 0.01  # AdamW weight decay
    warmup_steps: int = 0  # linear warm-up before cosine decay
    grad_clip: float = 1.0  # max gradient norm; 0 disables clipping
    grad_accum_steps: int = 1  # batches per optimiser step (DDP syncs on the last one only)
    seed: int = 42  # seeds python, numpy, torch and DataLoader workers
    deterministic: bool = False  # deterministic algorithms (slower); cudnn.benchmark off
    device: str = "auto"  # auto | cpu | cuda | mps
    out_dir: str = "runs/default"  # checkpoints, metrics.csv and the resolved config
    resume: str = ""  # "" fresh | auto (newest valid checkpoint in out_dir) | PATH
    checkpoint_every: int = 0  # also checkpoint every N steps (0: at epoch ends only)
    keep_last: int = 2  # step checkpoints kept besides last.pt and best.pt
    log_every: int = 10  # steps between progress updates and metrics rows
    amp: bool = True  # mixed precision
    amp_dtype: str = "auto"  # auto (bf16 on CPU, fp16 on CUDA) | bfloat16 | float16
    compile: bool = True  # torch.compile the model
    compile_mode: str = "default"  # default | reduce-overhead | max-autotune
    profile: bool = False  # profile a few steps with torch.profiler
    on_nonfinite: str = "stop"  # stop | warn: what a NaN/inf loss does
    logger: str = "csv"  # csv | tensorboard (metrics.csv always; tensorboard also logs there)


@dataclass
class Config:
    task: str = "image-classification"  # fixed by the template: decides loss and metrics
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


CHOICES = {
    "train.device": ("auto", "cpu", "cuda", "mps"),
    "train.amp_dtype": ("auto", "bfloat16", "float16"),
    "train.compile_mode": ("default", "reduce-overhead", "max-autotune"),
    "train.on_nonfinite": ("stop", "warn"),
    "train.logger": ("csv", "tensorboard"),
}


def load_config(
    path: str | Path | None = None, overrides: list[str] | None = None, base: Config | None = None
) -> Config:
    """Defaults (or `base`), then the TOML file (if any), then `section.key=value` overrides."""
    config = base or Config()
    if path is not None:
        try:
            values = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from exc
        for key, value in _flatten(values):
            _assign(config, key, value)
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"override {item!r} is not of the form section.key=value")
        _assign(config, key.strip(), _parse(raw.strip()))
    _validate(config)
    return config


def config_from_dict(values: dict[str, Any]) -> Config:
    """Rebuild a Config from `Config.to_dict()` output (e.g. stored in a checkpoint)."""
    config = Config()
    for key, value in _flatten(values):
        _assign(config, key, value)
    return config


def to_toml(config: Config) -> str:
    """The resolved config as TOML (flat sections of scalars)."""
    lines = [f"task = {_toml_value(config.task)}"]
    for section in ("data", "model", "train"):
        lines.append(f"\n[{section}]")
        for key, value in dataclasses.asdict(getattr(config, section)).items():
            lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def _flatten(values: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for key, value in values.items():
        if isinstance(value, dict):
            items.extend(_flatten(value, f"{prefix}{key}."))
        else:
            items.append((f"{prefix}{key}", value))
    return items


def _assign(config: Config, key: str, value: Any) -> None:
    section_name, _, name = key.rpartition(".")
    target: Any = getattr(config, section_name, None) if section_name else config
    current = getattr(target, name, None) if dataclasses.is_dataclass(target) else None
    if current is None or dataclasses.is_dataclass(current) or name.startswith("_"):
        raise ConfigError(f"unknown config key {key!r}; valid keys: {', '.join(valid_keys())}")
    setattr(target, name, _coerce(key, value, type(current)))


def _coerce(key: str, value: Any, kind: type) -> Any:
    if kind is bool and isinstance(value, bool):
        return value
    if kind is bool and isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
        return value.lower() in ("true", "1")
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind in (int, str) and type(value) is kind:
        return value
    if kind is str:
        return str(value)
    raise ConfigError(f"{key} expects {kind.__name__}, got {value!r}")


def _parse(raw: str) -> Any:
    """Read an override value the way TOML would; bare words stay strings."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _validate(config: Config) -> None:
    for key, allowed in CHOICES.items():
        section, name = key.split(".")
        value = getattr(getattr(config, section), name)
        if value not in allowed:
            raise ConfigError(f"{key} must be one of {', '.join(allowed)}; got {value!r}")
    train = config.train
    if min(train.batch_size, train.epochs, train.grad_accum_steps) < 1:
        raise ConfigError(
            "train.batch_size, train.epochs and train.grad_accum_steps must be at least 1"
        )
    if not 0 < config.train.lr < float("inf"):
        raise ConfigError(f"train.lr must be a positive finite number; got {config.train.lr}")
    if config.data.num_workers < 0:
        raise ConfigError("data.num_workers must be >= 0")


def valid_keys() -> list[str]:
    config = Config()
    return [
        f"{section}.{f.name}"
        for section in ("data", "model", "train")
        for f in dataclasses.fields(getattr(config, section))
    ]


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    escaped = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
