"""gpt: a GPT language model in nanoGPT's style (ptgen model kind "gpt").

Tokens (B, T), T <= data.block_size, get token embeddings plus learnt position
embeddings, pass `depth` pre-norm blocks (causal self-attention through
`F.scaled_dot_product_attention(is_causal=True)`, then an MLP, each added to the residual
stream), a final LayerNorm, and a linear head that shares its weights with the token
embedding (weight tying). The output is a score for every next token at every position,
(B, T, vocab). This file is yours: `ptgen update` never touches it.
"""

from __future__ import annotations

import math
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

    width: int = option(128, "embedding size (d_model)", low=1)
    depth: int = option(4, "transformer blocks", low=1)
    num_heads: int = option(4, "attention heads; model.width must be divisible by them", low=1)
    dropout: float = option(
        0.1, "dropout on embeddings, attention and residual branches", low=0.0, high=1.0
    )


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention in which each position sees itself and earlier ones only."""

    def __init__(self, width: int, num_heads: int, dropout: float) -> None:
        super().__init__()
        self.num_heads, self.dropout = num_heads, dropout
        self.qkv = nn.Linear(width, 3 * width)  # queries, keys and values in one matmul
        self.proj = nn.Linear(width, width)
        self.proj_dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)  # 3 x (B, T, C)
        q = q.view(b, t, self.num_heads, c // self.num_heads).transpose(1, 2)  # (B, H, T, C/H)
        k = k.view(b, t, self.num_heads, c // self.num_heads).transpose(1, 2)  # (B, H, T, C/H)
        v = v.view(b, t, self.num_heads, c // self.num_heads).transpose(1, 2)  # (B, H, T, C/H)
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)  # (B, H, T, C/H)
        y = y.transpose(1, 2).reshape(b, t, c)  # (B, T, C)
        return self.proj_dropout(self.proj(y))  # (B, T, C)


class Block(nn.Module):
    """Pre-norm: x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, width: int, num_heads: int, dropout: float) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attention = CausalSelfAttention(width, num_heads, dropout)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width),
            nn.GELU(),
            nn.Linear(4 * width, width),
            nn.Dropout(dropout),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))  # (B, T, C)
        return x + self.mlp(self.norm2(x))  # (B, T, C)


class GPT(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        block_size: int,
        width: int = 128,
        depth: int = 4,
        num_heads: int = 4,
        dropout: float = 0.1,
        grad_checkpointing: bool = False,
    ) -> None:
        super().__init__()
        if width % num_heads:
            raise ValueError(
                f"model.width ({width}) must be divisible by model.num_heads ({num_heads})"
            )
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, width)
        self.position_embedding = nn.Embedding(block_size, width)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(width, num_heads, dropout) for _ in range(depth))
        self.norm = nn.LayerNorm(width)  # pre-norm blocks leave the last output unnormalised
        self.head = nn.Linear(width, vocab_size, bias=False)
        self.head.weight = self.token_embedding.weight  # weight tying: one (vocab, C) matrix
        self.grad_checkpointing = grad_checkpointing
        self.apply(_init_weights)
        for name, parameter in self.named_parameters():  # GPT-2: scale the residual outputs
            if name.endswith(("proj.weight", "mlp.2.weight")):
                nn.init.normal_(parameter, std=0.02 / math.sqrt(2 * depth))

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        t = inputs.shape[1]
        if t > self.block_size:
            raise ValueError(f"{t} tokens are more than the model's block_size {self.block_size}")
        positions = torch.arange(t, device=inputs.device)  # (T,)
        x = self.token_embedding(inputs) + self.position_embedding(positions)  # (B, T, C)
        x = self.dropout(x)  # (B, T, C)
        for block in self.blocks:
            if self.grad_checkpointing and self.training:
                x = checkpoint(block, x, use_reentrant=False)  # (B, T, C)
            else:
                x = block(x)  # (B, T, C)
        x = self.norm(x)  # (B, T, C)
        return self.head(x)  # (B, T, vocab)


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def build(cfg: Options, spec: DataSpec) -> nn.Module:
    return GPT(
        vocab_size=spec.num_outputs,
        block_size=spec.block_size,
        width=cfg.width,
        depth=cfg.depth,
        num_heads=cfg.num_heads,
        dropout=cfg.dropout,
        grad_checkpointing=cfg.grad_checkpointing,
    )
