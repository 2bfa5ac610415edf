"""mlp: a multi-layer perceptron (ptgen model kind "mlp").

Each table row is one input vector of `num_features` values.

This file is yours: ptgen wrote it once and `ptgen update` never touches it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from ..config import ModelConfig, option
from ..tasks import DataSpec


@dataclass
class Options(ModelConfig):
    """[model] options of this model: set them with --set model.KEY=VALUE."""

    width: int = option(32, "hidden units per layer", low=1)
    depth: int = option(2, "hidden layers", low=1)
    dropout: float = option(0.1, "dropout before the output layer", low=0.0, high=1.0)


class HiddenBlock(nn.Module):
    """linear-layernorm-gelu: one hidden layer."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(in_features, out_features), nn.LayerNorm(out_features), nn.GELU()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)  # (B, F_in) -> (B, F_out)


class MLP(nn.Module):
    def __init__(
        self,
        in_features: int,
        num_outputs: int,
        width: int = 32,
        depth: int = 2,
        dropout: float = 0.1,
        grad_checkpointing: bool = False,
    ) -> None:
        super().__init__()
        sizes = [in_features] + [width] * depth
        self.features = nn.ModuleList(
            HiddenBlock(f_in, f_out) for f_in, f_out in zip(sizes[:-1], sizes[1:], strict=True)
        )
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(sizes[-1], num_outputs))
        self.grad_checkpointing = grad_checkpointing
        self.apply(_init_weights)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        x = inputs  # (B, F)
        for block in self.features:
            if self.grad_checkpointing and self.training:
                x = checkpoint(block, x, use_reentrant=False)  # (B, width)
            else:
                x = block(x)  # (B, width)
        return self.head(x)  # (B, num_outputs)


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        nn.init.zeros_(module.bias)
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


def build(cfg: Options, spec: DataSpec) -> nn.Module:
    return MLP(
        in_features=spec.num_features,
        num_outputs=spec.num_outputs,
        width=cfg.width,
        depth=cfg.depth,
        dropout=cfg.dropout,
        grad_checkpointing=cfg.grad_checkpointing,
    )
