"""Model components.

Every module in this package not starting with "_" is a model component: an `Options`
dataclass (its [model] config keys) and `build(cfg, spec) -> nn.Module`. `model.name`
picks one.

A model built from files besides the config (a Hugging Face backbone's folder) can record
what rebuilding it needs in a `build_state()` method returning plain values; checkpoints
save that record, and its component's `build(cfg, spec, state)` takes it back, so that
evaluate, predict and export rebuild the model from the checkpoint alone (its weights
come from the checkpoint too).
"""

from __future__ import annotations

from typing import Any

from torch import nn

from ..config import ModelConfig, component
from ..tasks import DataSpec


def build_model(cfg: ModelConfig, spec: DataSpec, state: dict[str, Any] | None = None) -> nn.Module:
    """The configured model component, built for data described by `spec`; pass a
    checkpoint's `model_build` (see `build_state`) to rebuild the trained model from it."""
    if state:
        return component("model", cfg.name).build(cfg, spec, state)
    return component("model", cfg.name).build(cfg, spec)


def build_state(model: nn.Module) -> dict[str, Any]:
    """The model's record of what it was built from (its `build_state()`), saved in
    checkpoints as `model_build`; {} for a model the config alone rebuilds."""
    record = getattr(unwrap(model), "build_state", None)
    return record() if callable(record) else {}


def unwrap(model: nn.Module) -> nn.Module:
    """The plain module under torch.compile (`_orig_mod`) and DDP (`module`) wrappers."""
    while True:
        if isinstance(getattr(model, "_orig_mod", None), nn.Module):
            model = model._orig_mod
        elif isinstance(model, (nn.parallel.DistributedDataParallel, nn.DataParallel)):
            model = model.module
        else:
            return model
