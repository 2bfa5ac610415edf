"""unet: a small U-Net for semantic segmentation (ptgen model kind "unet").

An encoder of `depth` stages of two 3x3 conv-bn-relu layers, each stage after the first
halving the resolution (max pooling) and doubling the channels; a decoder that upsamples
back stage by stage (bilinear, to the exact size of the matching encoder stage, so any
image size works, odd ones included), concatenates that stage's features (the skip
connection: where things are) and applies two conv-bn-relu layers again; a 1x1
convolution gives per-pixel class scores at the input's resolution. Dropout acts on the
bottleneck's channels.

This file is yours: ptgen wrote it once and `ptgen update` never touches it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from ..config import ModelConfig, option
from ..tasks import DataSpec


@dataclass
class Options(ModelConfig):
    """[model] options of this model: set them with --set model.KEY=VALUE."""

    width: int = option(16, "channels of the first encoder stage; each stage doubles them", low=1)
    depth: int = option(3, "encoder stages (depth - 1 halvings of the resolution)", low=2)
    dropout: float = option(0.1, "channel dropout on the bottleneck", low=0.0, high=1.0)


class DoubleConv(nn.Module):
    """conv-bn-relu twice, at the same resolution."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)  # (B, C_in, H, W) -> (B, C_out, H, W)


class Down(nn.Module):
    """Halve the resolution, then DoubleConv."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.pool = nn.MaxPool2d(2)
        self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(self.pool(x))  # (B, C_in, H, W) -> (B, C_out, H/2, W/2)


class Up(nn.Module):
    """Upsample to the skip connection's size, concatenate it, then DoubleConv."""

    def __init__(self, in_channels: int, skip_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = DoubleConv(in_channels + skip_channels, out_channels)

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        x = F.interpolate(x, size=skip.shape[-2:], mode="bilinear", align_corners=False)
        # x: (B, C_in, H_skip, W_skip)
        x = torch.cat([x, skip], dim=1)  # (B, C_in + C_skip, H_skip, W_skip)
        return self.conv(x)  # (B, C_out, H_skip, W_skip)


class UNet(nn.Module):
    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        width: int = 16,
        depth: int = 3,
        dropout: float = 0.1,
        grad_checkpointing: bool = False,
    ) -> None:
        super().__init__()
        channels = [width * 2**i for i in range(depth)]  # per encoder stage
        self.stem = DoubleConv(in_channels, channels[0])
        self.down = nn.ModuleList(
            Down(c_in, c_out) for c_in, c_out in zip(channels[:-1], channels[1:], strict=True)
        )
        self.dropout = nn.Dropout2d(dropout)
        self.up = nn.ModuleList(
            Up(c_in, c_skip, c_skip)
            for c_in, c_skip in zip(channels[:0:-1], channels[-2::-1], strict=True)
        )
        self.head = nn.Conv2d(channels[0], num_classes, kernel_size=1)
        self.grad_checkpointing = grad_checkpointing
        self.apply(_init_weights)

    def run(self, block: nn.Module, *args: torch.Tensor) -> torch.Tensor:
        """`block(*args)`, its activations recomputed in backward with grad checkpointing."""
        if self.grad_checkpointing and self.training:
            return checkpoint(block, *args, use_reentrant=False)
        return block(*args)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        x = self.run(self.stem, inputs)  # (B, width, H, W)
        skips = [x]
        for stage in self.down:
            x = self.run(stage, x)  # (B, C_i, H_i / 2, W_i / 2)
            skips.append(x)
        x = self.dropout(skips.pop())  # (B, C_last, H / 2^(depth-1), W / 2^(depth-1))
        for stage in self.up:
            x = self.run(stage, x, skips.pop())  # (B, C_skip, H_skip, W_skip)
        return self.head(x)  # (B, num_classes, H, W)


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, nn.Conv2d):
        nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.BatchNorm2d):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


def build(cfg: Options, spec: DataSpec) -> nn.Module:
    return UNet(
        in_channels=spec.in_channels,
        num_classes=spec.num_outputs,
        width=cfg.width,
        depth=cfg.depth,
        dropout=cfg.dropout,
        grad_checkpointing=cfg.grad_checkpointing,
    )
