"""resnet: a small residual network (ptgen model kind "resnet").

A stem, then `depth` stages of one basic block each; every stage after the first halves
the resolution and doubles the channels. Adaptive pooling to a `pool_size` x `pool_size`
grid makes the head independent of the input resolution while keeping where each
feature is (global pooling, pool_size=1, loses that: the last features of a small
network see only part of the image). This file is yours: `ptgen update` never touches it.
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

    width: int = option(32, "channels of the stem and first stage; each stage doubles them", low=1)
    depth: int = option(2, "residual stages; each after the first halves the resolution", low=1)
    dropout: float = option(0.1, "dropout before the linear head", low=0.0, high=1.0)
    pool_size: int = option(
        4, "the head sees a pool_size x pool_size grid (1: global pooling)", low=1
    )


class BasicBlock(nn.Module):
    """Two 3x3 convolutions plus a shortcut (a 1x1 projection when the shape changes)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
        )
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual = self.shortcut(x)  # (B, C_out, H/s, W/s)
        x = self.body(x)  # (B, C_out, H/s, W/s)
        x = x + residual  # (B, C_out, H/s, W/s); out of place, autograd needs both inputs
        return self.act(x)  # (B, C_out, H/s, W/s)


class ResNet(nn.Module):
    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        width: int = 32,
        depth: int = 2,
        dropout: float = 0.1,
        pool_size: int = 4,
        grad_checkpointing: bool = False,
    ) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
        )
        channels = [width * 2**i for i in range(depth)]
        self.stages = nn.ModuleList(
            BasicBlock(c_in, c_out, stride=1 if i == 0 else 2)
            for i, (c_in, c_out) in enumerate(zip([width] + channels[:-1], channels, strict=True))
        )
        # Adaptive pooling to a small grid, not to one value per channel: the head's size
        # does not depend on the input resolution, yet it still sees where in the image
        # each feature is (global pooling throws that away, which costs accuracy whenever
        # the last features see only part of the object; see the model's docstring).
        self.pool = nn.AdaptiveAvgPool2d(pool_size)
        head_features = channels[-1] * pool_size * pool_size
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(head_features, num_classes))
        self.grad_checkpointing = grad_checkpointing
        self.apply(_init_weights)

    def repeated_blocks(self) -> list[nn.Module]:
        """The blocks that train.strategy=fsdp shards one by one (then the rest as one)."""
        return list(self.stages)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        x = self.stem(inputs)  # (B, width, H, W)
        for block in self.stages:
            if self.grad_checkpointing and self.training:
                x = checkpoint(block, x, use_reentrant=False)  # (B, C_i, H_i, W_i)
            else:
                x = block(x)  # (B, C_i, H_i, W_i)
        x = self.pool(x).flatten(1)  # (B, C_last * pool_size * pool_size)
        return self.classifier(x)  # (B, num_classes)


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, nn.Conv2d):
        nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
    elif isinstance(module, nn.BatchNorm2d):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=0.01)
        nn.init.zeros_(module.bias)


def build(cfg: Options, spec: DataSpec) -> nn.Module:
    return ResNet(
        in_channels=spec.in_channels,
        num_classes=spec.num_outputs,
        width=cfg.width,
        depth=cfg.depth,
        dropout=cfg.dropout,
        pool_size=cfg.pool_size,
        grad_checkpointing=cfg.grad_checkpointing,
    )
