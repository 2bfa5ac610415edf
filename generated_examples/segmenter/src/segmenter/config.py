"""Typed configuration: dataclasses, TOML files and `--set section.key=value` overrides.

`task` is fixed by the template; `[train]` is declared here; `[data]` and `[model]` are the
`Options` dataclasses of the components that `data.name` and `model.name` pick, each in its
own file. configs/default.toml is written from these dataclasses (`defaults --write`).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import pkgutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

TASK = "segmentation"  # what this project learns; fixed by the template
PACKAGES = {"data": "data", "model": "models"}  # config section -> package of its components


class ConfigError(ValueError):
    """A config file or override that cannot be used; the message says why."""


def option(
    default: Any,
    doc: str,
    *,
    choices: tuple[str, ...] = (),
    low: float | None = None,
    high: float | None = None,
    auto: bool = False,
) -> Any:
    """A config field: default, help (its default.toml comment), choices or range, "auto"."""
    metadata = {"doc": doc, "choices": choices, "low": low, "high": high, "auto": auto}
    return field(default=default, metadata=metadata)


@dataclass
class DataConfig:
    """[data] keys of every dataset; a dataset component's `Options` adds its own."""

    name: str = option("image_masks", "dataset component: a module in data/")
    num_workers: int | str = option(0, "loader processes (auto: one per core)", low=0, auto=True)


@dataclass
class ModelConfig:
    """[model] keys of every model; a model component's `Options` adds its own."""

    name: str = option("unet", "model component: a module in models/")
    grad_checkpointing: bool = option(False, "recompute activations in backward: less memory")


@dataclass
class TrainConfig:
    """[train]: how to train, the same for every task and component."""

    epochs: int = option(10, "passes over the training set", low=1)
    max_steps: int = option(0, "stop after this many optimizer steps when > 0", low=0)
    batch_size: int = option(32, "samples per process and batch", low=1)
    eval_batch_size: int = option(0, "validation/test batch (0: auto, up to 64x in memory)", low=0)
    lr: float = option(0.001, "peak learning rate", low=0.0)
    weight_decay: float = option(0.01, "AdamW's decoupled weight decay", low=0.0)
    scheduler: str = option("cosine", "lr after the warm-up", choices=("cosine", "constant"))
    warmup_steps: int = option(0, "linear warm-up steps", low=0)
    early_stopping_patience: int = option(0, "stop after N evaluations not improving", low=0)
    early_stopping_min_delta: float = option(0.0, "the least change that improves", low=0.0)
    grad_clip: float = option(1.0, "max gradient norm; 0 disables clipping", low=0.0)
    grad_accum_steps: int = option(1, "batches per optimizer step (DDP syncs on the last)", low=1)
    seed: int = option(42, "seeds python, numpy, torch and data workers", low=0, high=2**32 - 1)
    deterministic: bool = option(False, "deterministic kernels (slower); cudnn.benchmark off")
    device: str = option("auto", "where to train", choices=("auto", "cpu", "cuda", "mps"))
    out_dir: str = option("runs/default", "checkpoints, metrics.csv and the resolved config")
    resume: str = option("", '"" fresh, auto (newest valid checkpoint in out_dir) or a PATH')
    checkpoint_every: int = option(0, "also checkpoint every N steps (0: epoch ends only)", low=0)
    keep_last: int = option(2, "step checkpoints kept besides last.pt and best.pt", low=0)
    monitor: str = option(
        "miou",
        "validation metric that picks best.pt",
        choices=("miou", "pixel_accuracy", "loss"),
    )
    log_every: int = option(10, "steps between progress updates and metrics rows", low=1)
    amp: bool = option(False, "autocast: bfloat16 where supported, else float16 with a GradScaler")
    amp_dtype: str = option("auto", "autocast dtype", choices=("auto", "bfloat16", "float16"))
    matmul_precision: str = option(
        "auto", "auto: high (TF32) on CUDA only", choices=("auto", "highest", "high", "medium")
    )
    compile: bool = option(False, "torch.compile the model (the first step is slow)")
    compile_mode: str = option(
        "default", "torch.compile mode", choices=("default", "reduce-overhead", "max-autotune")
    )
    on_nonfinite: str = option("stop", "what a NaN/inf loss does", choices=("stop", "warn"))


@dataclass
class Config:
    task: str = TASK
    data: DataConfig = field(default_factory=lambda: options_class("data")())
    model: ModelConfig = field(default_factory=lambda: options_class("model")())
    train: TrainConfig = field(default_factory=TrainConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def available(section: str) -> list[str]:
    """The components of a section ("data" or "model"): the modules of data/ or models/."""
    package = importlib.import_module(f"{__package__}.{PACKAGES[section]}")
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.name[0] != "_")


def component(section: str, name: str) -> ModuleType:
    """The component `name` of a section, found by name; an unknown name lists the others."""
    if name not in available(section):
        raise ConfigError(f"unknown {section} {name!r}; available: {', '.join(available(section))}")
    return importlib.import_module(f"{__package__}.{PACKAGES[section]}.{name}")


def options_class(section: str, name: str | None = None) -> type:
    """The `Options` dataclass of a component (default: the section's default component)."""
    base = {"data": DataConfig, "model": ModelConfig}[section]
    return getattr(component(section, name or base().name), "Options", base)


def load_config(
    path: str | Path | None = None, overrides: list[str] | None = None, base: Config | None = None
) -> Config:
    """Defaults (or `base`), then the TOML file (if any), then `section.key=value` overrides."""
    items = flatten(base.to_dict()) if base else []
    if path is not None:
        values = _read_toml(Path(path))
        items += flatten(values)
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"override {item!r} is not of the form section.key=value")
        items.append((key.strip(), _parse(raw.strip())))
    return build_config(items)


def config_from_dict(values: dict[str, Any]) -> Config:
    """A Config from `Config.to_dict()` (a checkpoint's); keys no component declares now (an
    older template, an edited component) are left out: the weights are checked on load."""
    return build_config(flatten(values), known_only=True)


def build_config(items: list[tuple[str, Any]], known_only: bool = False) -> Config:
    """A Config from (dotted key, value) pairs; an unknown key is an error (or `known_only`)."""
    values = dict(items)
    sections = {}
    for section in PACKAGES:
        name = values.get(f"{section}.name")
        if name is not None and not isinstance(name, str):
            raise ConfigError(f"{section}.name expects a component name, got {name!r}")
        sections[section] = options_class(section, name)()
    config = Config(**sections)
    known = set(valid_keys(config))
    for key, value in values.items():
        if key in known or not known_only:
            _assign(config, key, value)
    _validate(config)
    return config


def to_toml(config: Config, comments: bool = False) -> str:
    """The config as TOML: `task`, then one table per section; with `comments`, each key's help."""
    lines = [f"task = {_toml_value(config.task)}"]
    for section in ("data", "model", "train"):
        lines.append(f"\n[{section}]")
        values = getattr(config, section)
        for f in dataclasses.fields(values):
            line = f"{f.name} = {_toml_value(getattr(values, f.name))}"
            lines.append(f"{line}  # {_comment(f)}" if comments else line)
    return "\n".join(lines) + "\n"


def defaults_toml(config: Config, package: str) -> str:
    """configs/default.toml: every option with its default and help."""
    return (
        f"# Every option of {package}, with its default, written from the option dataclasses\n"
        "# (config.py and each component's Options): change a default there, then run\n"
        f"#   python -m {package} defaults --write\n"
        "# Experiment configs hold only what they change:\n"
        f"#   python -m {package} train --config configs/my-run.toml --set train.lr=3e-4\n"
        + to_toml(config, comments=True)
    )


def valid_keys(config: Config) -> list[str]:
    return ["task"] + [
        f"{section}.{f.name}"
        for section in ("data", "model", "train")
        for f in dataclasses.fields(getattr(config, section))
    ]


def _comment(f: dataclasses.Field) -> str:
    choices = f.metadata.get("choices")
    return f.metadata.get("doc", "") + (f": {' | '.join(choices)}" if choices else "")


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
        return tomllib.loads(data.decode("utf-8").removeprefix("\ufeff"))  # a BOM (Notepad's)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"cannot read config {path}:{line}: not UTF-8 text") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from None


def flatten(values: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """{"train": {"lr": 0.1}} -> [("train.lr", 0.1)]"""
    items: list[tuple[str, Any]] = []
    for key, value in values.items():
        if isinstance(value, dict):
            items.extend(flatten(value, f"{prefix}{key}."))
        else:
            items.append((f"{prefix}{key}", value))
    return items


def _assign(config: Config, key: str, value: Any) -> None:
    if key == "task":
        if value != TASK:
            raise ConfigError(f"task is fixed by the template: this project learns {TASK}")
        return
    section_name, _, name = key.partition(".")
    section = getattr(config, section_name) if section_name in ("data", "model", "train") else None
    fields = {f.name: f for f in dataclasses.fields(section)} if section is not None else {}
    if name not in fields:
        raise ConfigError(
            f"unknown config key {key!r}; valid keys: {', '.join(valid_keys(config))}"
        )
    if fields[name].metadata.get("auto"):
        if value != "auto" and type(value) is not int:
            raise ConfigError(f'{key} expects an integer or "auto", got {value!r}')
        setattr(section, name, value)
        return
    setattr(section, name, _coerce(key, value, type(getattr(section, name))))


def _coerce(key: str, value: Any, kind: type) -> Any:
    if kind is bool and isinstance(value, bool):
        return value
    if kind is bool and isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
        return value.lower() in ("true", "1")
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind is tuple:
        return _strings(key, value)
    if kind in (int, str) and type(value) is kind:
        return value
    if kind is str:
        return str(value)
    raise ConfigError(f"{key} expects {kind.__name__}, got {value!r}")


def _strings(key: str, value: Any) -> tuple[str, ...]:
    """A list option: a TOML array of strings, or words separated by commas (--set)."""
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key} expects a list of strings, got {value!r}")
    return tuple(value)


def _parse(raw: str) -> Any:
    """Read an override value the way TOML would; bare words stay strings."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _validate(config: Config) -> None:
    """Every field against its `choices` and range; a learning rate must also be > 0."""
    for section in ("data", "model", "train"):
        values = getattr(config, section)
        for f in dataclasses.fields(values):
            key, value = f"{section}.{f.name}", getattr(values, f.name)
            choices, low, high = (f.metadata.get(k) for k in ("choices", "low", "high"))
            if f.metadata.get("auto") and value == "auto":
                continue
            if choices and value not in choices:
                raise ConfigError(f"{key} must be one of {', '.join(choices)}; got {value!r}")
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{key} must be a finite number; got {value}")
            if low is not None and value < low or high is not None and value > high:
                bounds = f"between {low} and {high}" if high is not None else f">= {low}"
                raise ConfigError(f"{key} must be {bounds}; got {value}")
    if config.train.lr <= 0:
        raise ConfigError(f"train.lr must be a positive number; got {config.train.lr}")


def _toml_value(value: Any) -> str:
    """JSON's booleans, numbers, arrays and escaped strings are TOML's too."""
    return json.dumps(value, ensure_ascii=False, default=str)
