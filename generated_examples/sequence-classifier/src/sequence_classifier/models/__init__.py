"""Model components.

Every module in this package (not starting with "_") is a model component with a
`build(cfg, spec)` function returning an `nn.Module`; `model.name` picks one.
"""

from __future__ import annotations

import importlib
import pkgutil

from torch import nn

from ..config import ConfigError, ModelConfig
from ..data import DataSpec


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def build_model(cfg: ModelConfig, spec: DataSpec) -> nn.Module:
    if cfg.name not in available():
        raise ConfigError(f"unknown model {cfg.name!r}; available: {', '.join(available())}")
    module = importlib.import_module(f"{__name__}.{cfg.name}")
    return module.build(cfg, spec)


def unwrap(model: nn.Module) -> nn.Module:
    """The plain module under torch.compile (`_orig_mod`) and DDP (`module`) wrappers."""
    while True:
        if isinstance(getattr(model, "_orig_mod", None), nn.Module):
            model = model._orig_mod
        elif isinstance(model, (nn.parallel.DistributedDataParallel, nn.DataParallel)):
            model = model.module
        else:
            return model
