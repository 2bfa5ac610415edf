"""Model components: every module here not starting with "_" is one, with an `Options`
dataclass (its [model] config keys) and `build(cfg, spec) -> nn.Module`; `model.name` picks.

A model built from files besides the config (a Hugging Face backbone's folder) records what
rebuilding it needs in a `build_state()` method; checkpoints save it (`model_build`) and
the component's `build(cfg, spec, state)` takes it back: the checkpoint alone rebuilds it.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from ..config import ModelConfig, component
from ..tasks import DataSpec


def build_model(cfg: ModelConfig, spec: DataSpec, state: dict[str, Any] | None = None) -> nn.Module:
    """The configured model for data described by `spec` (and a checkpoint's `model_build`)."""
    build = component("model", cfg.name).build
    return build(cfg, spec, state) if state else build(cfg, spec)


def build_state(model: nn.Module) -> dict[str, Any]:
    """The model's `build_state()`; {} for a model the config alone rebuilds."""
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
