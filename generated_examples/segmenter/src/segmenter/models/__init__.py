"""Model components.

Every module in this package not starting with "_" is a model component: an `Options`
dataclass (its [model] config keys) and `build(cfg, spec) -> nn.Module`. `model.name`
picks one.
"""

from __future__ import annotations

from torch import nn

from ..config import ModelConfig, component
from ..tasks import DataSpec


def build_model(cfg: ModelConfig, spec: DataSpec) -> nn.Module:
    """The configured model component, built for data described by `spec`."""
    return component("model", cfg.name).build(cfg, spec)


def unwrap(model: nn.Module) -> nn.Module:
    """The plain module under torch.compile (`_orig_mod`) and DDP (`module`) wrappers."""
    while True:
        if isinstance(getattr(model, "_orig_mod", None), nn.Module):
            model = model._orig_mod
        elif isinstance(model, (nn.parallel.DistributedDataParallel, nn.DataParallel)):
            model = model.module
        else:
            return model
