"""Tests of the gpt model: output shapes, a forward+backward pass, checkpointing."""

from __future__ import annotations

import torch

from language_model.data._synthetic import example_batch
from language_model.models import build_model
from language_model.models.gpt import Options
from language_model.tasks import DataSpec

SPEC = DataSpec(num_outputs=5)


def build(**overrides: object) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(Options(name="gpt", **overrides), SPEC)


def test_output_shape() -> None:
    model = build().eval()
    with torch.no_grad():
        outputs = model(**example_batch(SPEC, 4))
    length = example_batch(SPEC, 4)["inputs"].shape[1]
    assert outputs.shape == (4, length, SPEC.num_outputs)  # a score per next token


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


def test_a_position_sees_no_later_token() -> None:
    model = build(dropout=0.0).eval()
    inputs = example_batch(SPEC, 2)["inputs"]  # (B, T)
    changed = inputs.clone()
    changed[:, -1] = (changed[:, -1] + 1) % SPEC.num_outputs  # only the last token differs
    with torch.no_grad():
        before, after = model(inputs=inputs), model(inputs=changed)  # (B, T, vocab)
    torch.testing.assert_close(after[:, :-1], before[:, :-1])
    assert not torch.allclose(after[:, -1], before[:, -1])
