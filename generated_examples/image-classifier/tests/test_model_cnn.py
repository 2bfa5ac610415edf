"""Tests of the cnn model: output shapes and a forward+backward pass."""

from __future__ import annotations

import torch

from image_classifier.config import ModelConfig
from image_classifier.data import DataSpec
from image_classifier.models import build_model

SPEC = DataSpec("image-classification", num_outputs=5, in_channels=3, image_size=32)


def make_batch(batch_size: int = 4) -> dict[str, torch.Tensor]:
    return {"inputs": torch.randn(batch_size, 3, 32, 32)}  # (B, C, H, W)


def build(**overrides: object) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(ModelConfig(name="cnn", **overrides), SPEC)


def test_output_shape() -> None:
    model = build().eval()
    with torch.no_grad():
        outputs = model(**make_batch(4))
    assert outputs.shape == (4, SPEC.num_outputs)


def test_forward_backward_reaches_every_parameter() -> None:
    model = build().train()
    model(**make_batch(4)).sum().backward()
    missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert not missing, f"no gradient for {missing}"


def test_grad_checkpointing_matches_plain() -> None:
    plain, checkpointed = build(dropout=0.0), build(dropout=0.0, grad_checkpointing=True)
    batch = make_batch(4)
    out_plain, out_ckpt = plain(**batch), checkpointed(**batch)
    torch.testing.assert_close(out_ckpt, out_plain)
    out_plain.sum().backward()
    out_ckpt.sum().backward()
    for (name, p), q in zip(plain.named_parameters(), checkpointed.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, msg=f"gradient of {name}")
