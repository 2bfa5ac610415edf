"""`python -m <package> evaluate`: a checkpoint's loss and metrics on the val or test split,
its data prepared with the state saved in the checkpoint, exactly as in training. Besides
pixel accuracy and mean IoU, the result holds each class's IoU and labelled pixel count,
and the pixel confusion matrix; pixels marked `ignore_index` are not counted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from torch import nn
from torch.utils.data import Dataset

from . import checkpoint as ckpt
from . import provenance
from .config import Config, ConfigError, DataConfig, config_from_dict, load_config
from .data import DataBundle, build_data, eval_loader
from .engine import evaluate
from .models import build_model
from .monitor import format_metrics
from .runtime import DistInfo, Precision, get_device, precision
from .tasks import DataSpec, Task, get_task


def trained_model(
    path: str, config_file: str | None = None, overrides: tuple[str, ...] | list[str] = ()
) -> tuple[dict[str, Any], Config, DataSpec, nn.Module]:
    """A checkpoint, its config (+ overrides) and its model, built from the checkpoint alone
    (`data_spec`, `model_build`); the weights are not loaded yet."""
    checkpoint = ckpt.load_checkpoint(path)
    config = load_config(config_file, list(overrides), base=config_from_dict(checkpoint["config"]))
    if checkpoint.get("data_spec"):
        spec = DataSpec(**checkpoint["data_spec"])
    else:  # a checkpoint from before template 0.3: the data, which must exist, tells
        spec = build_data(config.data, config.train.seed, checkpoint.get("data_state")).spec
    return checkpoint, config, spec, build_model(config.model, spec, checkpoint.get("model_build"))


@dataclass
class Inference:
    """A trained model in eval mode on its device, with what it knows about its data."""

    config: Config
    spec: DataSpec
    state: dict[str, Any]  # the dataset's saved state (classes, normalisation, ...)
    task: Task
    model: nn.Module
    precision: Precision
    about: dict[str, Any]  # the checkpoint's step and provenance


def load_inference(
    path: str, config_file: str | None = None, overrides: tuple[str, ...] | list[str] = ()
) -> Inference:
    """The checkpoint's model with its weights, in eval mode on its device; no data is read."""
    checkpoint, config, spec, model = trained_model(path, config_file, overrides)
    ckpt.load_model_state(model, checkpoint, path, config.to_dict())
    device = get_device(config.train.device)
    state = checkpoint.get("data_state") or {}
    task = get_task(config.task).for_data(spec, state)
    amp = precision(device, config.train)
    about = {key: checkpoint.get(key) for key in ("step", "provenance")}
    return Inference(config, spec, state, task, model.to(device).eval(), amp, about)


def evaluate_checkpoint(
    path: str, config_file: str | None, overrides: list[str], split: str = "val"
) -> dict[str, Any]:
    """Evaluate a checkpoint with its own config (+ overrides)."""
    checkpoint, config, spec, model = trained_model(path, config_file, overrides)
    ckpt.load_model_state(model, checkpoint, path, config.to_dict())
    device = get_device(config.train.device)
    bundle = build_data(config.data, config.train.seed, checkpoint.get("data_state"))
    loader = eval_loader(bundle, split_of(bundle, split, config.data), config, DistInfo(), device)
    amp = precision(device, config.train)
    task = get_task(config.task, config.train.monitor).for_data(spec, bundle.state)
    result = evaluate(model.to(device), loader, task, amp, DistInfo(), details=True)
    if split == "test" and os.path.basename(path) == "best.pt":  # its card gets the test metrics
        provenance.write_card(path, model, checkpoint, result)
    return {"split": split, **result, "provenance": checkpoint.get("provenance")}


def split_of(bundle: DataBundle, split: str, data: DataConfig) -> Dataset:
    """The dataset of `split`; a data set without a test split is a one-line error."""
    if split == "val":
        return bundle.val
    if bundle.load_test is None:
        where = f"data.root {data.root!r}" if getattr(data, "root", "") else f"data {data.name!r}"
        raise ConfigError(
            f"{where} has no test split: put it in root/test/images/ and root/test/masks/"
        )
    test = bundle.load_test()
    if len(test) == 0:
        raise ConfigError(f"the test split of {data.root} is empty")
    return test


def format_report(result: dict[str, Any]) -> str:
    """The result for reading: the metrics on one line, a line per class."""
    numbers = {k: v for k, v in result.items() if isinstance(v, (int, float))}
    lines = [f"{result['split']}: {format_metrics(numbers)}"]
    width = max(len(name) for name in [*result["per_class"], "class"])
    lines.append(f"{'class':<{width}}     iou     pixels")
    for name, m in result["per_class"].items():
        lines.append(f"{name:<{width}}  {m['iou']:6.4f}  {m['pixels']:9d}")
    return "\n".join(lines)
