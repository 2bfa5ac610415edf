"""Tests of the unet model: output shapes, a forward+backward pass, checkpointing."""

from __future__ import annotations

import torch

from segmenter.data._synthetic import example_batch
from segmenter.models import build_model
from segmenter.models.unet import Options
from segmenter.tasks import DataSpec

SPEC = DataSpec(num_outputs=5)


def build(**overrides: object) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(Options(name="unet", **overrides), SPEC)


def test_output_shape() -> None:
    model = build().eval()
    with torch.no_grad():
        outputs = model(**example_batch(SPEC, 4))
    size = SPEC.image_size
    assert outputs.shape == (4, SPEC.num_outputs, size, size)  # per-pixel class scores


def test_forward_backward_reaches_every_parameter() -> None:
    model = build().train()
    model(**example_batch(SPEC, 4)).sum().backward()
    missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert not missing, f"no gradient for {missing}"


def test_grad_checkpointing_matches_plain() -> None:
    plain, checkpointed = build(dropout=0.0), build(dropout=0.0, grad_checkpointing=True)
    batch = example_batch(SPEC, 4)
    out_plain, out_ckpt = plain(**batch), checkpointed(**batch)
    torch.testing.assert_close(out_ckpt, out_plain)
    out_plain.sum().backward()
    out_ckpt.sum().backward()
    for (name, p), q in zip(plain.named_parameters(), checkpointed.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, msg=f"gradient of {name}")
