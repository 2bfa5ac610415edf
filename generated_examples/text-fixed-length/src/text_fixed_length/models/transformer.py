"""transformer: a transformer encoder sequence classifier (ptgen model kind "transformer").

Tokens (B, T) with 0 = padding get token embeddings plus fixed sinusoidal positions (no
maximum length to configure), pass `depth` pre-norm encoder layers that ignore padded keys
(`src_key_padding_mask`), and are mean-pooled over the real tokens only. This file is yours:
`ptgen update` never touches it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from ..config import ModelConfig, option
from ..tasks import DataSpec


@dataclass
class Options(ModelConfig):
    """[model] options of this model: set them with --set model.KEY=VALUE."""

    width: int = option(32, "embedding size (d_model)", low=1)
    depth: int = option(2, "encoder layers", low=1)
    dropout: float = option(
        0.1, "dropout in the encoder layers and on the embeddings", low=0.0, high=1.0
    )
    num_heads: int = option(4, "attention heads; model.width must be divisible by them", low=1)


PAD_INDEX = 0


def sinusoidal_positions(length: int, dim: int, device: torch.device) -> torch.Tensor:
    """The fixed position encoding of "Attention Is All You Need", shape (T, C)."""
    position = torch.arange(length, device=device, dtype=torch.float32)[:, None]  # (T, 1)
    step = torch.arange(0, dim, 2, device=device, dtype=torch.float32)  # (ceil(C/2),)
    angle = position * torch.exp(step * (-math.log(10000.0) / dim))  # (T, ceil(C/2))
    encoding = torch.zeros(length, dim, device=device)  # (T, C)
    encoding[:, 0::2] = torch.sin(angle)  # (T, ceil(C/2))
    encoding[:, 1::2] = torch.cos(angle[:, : dim // 2])  # (T, floor(C/2))
    return encoding


class TransformerClassifier(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        width: int = 32,
        depth: int = 2,
        dropout: float = 0.1,
        grad_checkpointing: bool = False,
        num_heads: int = 4,
    ) -> None:
        super().__init__()
        if width % num_heads:
            raise ValueError(
                f"model.width ({width}) must be divisible by model.num_heads ({num_heads})"
            )
        self.width = width
        self.embedding = nn.Embedding(vocab_size, width, padding_idx=PAD_INDEX)
        self.dropout = nn.Dropout(dropout)
        # Layers kept in a ModuleList (not nn.TransformerEncoder) so each one can be
        # checkpointed and the padding mask is passed to each explicitly.
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(
                width,
                num_heads,
                dim_feedforward=4 * width,
                dropout=dropout,
                activation="gelu",
                batch_first=True,
                norm_first=True,  # pre-norm: stable without learning-rate warm-up
            )
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(width)  # pre-norm layers leave the last output unnormalised
        self.classifier = nn.Linear(width, num_classes)
        self.grad_checkpointing = grad_checkpointing
        self.apply(_init_weights)

    def forward(
        self, inputs: torch.Tensor, lengths: torch.Tensor, padding_mask: torch.Tensor
    ) -> torch.Tensor:
        """`lengths` is unused: `padding_mask` carries the same information for attention."""
        positions = sinusoidal_positions(inputs.shape[1], self.width, inputs.device)  # (T, C)
        x = self.embedding(inputs) * math.sqrt(self.width) + positions  # (B, T, C)
        x = self.dropout(x)  # (B, T, C)
        for layer in self.layers:
            if self.grad_checkpointing and self.training:
                x = checkpoint(
                    layer, x, src_key_padding_mask=padding_mask, use_reentrant=False
                )  # (B, T, C)
            else:
                x = layer(x, src_key_padding_mask=padding_mask)  # (B, T, C)
        x = self.norm(x)  # (B, T, C)
        keep = (~padding_mask).unsqueeze(-1).to(x.dtype)  # (B, T, 1), 1 = real token
        pooled = (x * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1)  # (B, C)
        return self.classifier(pooled)  # (B, num_classes)


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=module.embedding_dim**-0.5)  # unit scale after sqrt(C)
        if module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()  # the padding vector stays zero
    elif isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


def build(cfg: Options, spec: DataSpec) -> nn.Module:
    return TransformerClassifier(
        vocab_size=spec.vocab_size,
        num_classes=spec.num_outputs,
        width=cfg.width,
        depth=cfg.depth,
        dropout=cfg.dropout,
        grad_checkpointing=cfg.grad_checkpointing,
        num_heads=cfg.num_heads,
    )
