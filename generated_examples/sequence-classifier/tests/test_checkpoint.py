from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sequence_classifier.checkpoint import CheckpointError, load_checkpoint
from sequence_classifier.config import Config, load_config
from sequence_classifier.data import build_data
from sequence_classifier.models import build_model
from sequence_classifier.train import fit
from sequence_classifier.transfer import init_from


def test_checkpoint_round_trip(tiny_config: Config) -> None:
    fit(tiny_config)
    path = Path(tiny_config.train.out_dir) / "last.pt"
    checkpoint = load_checkpoint(path)  # weights_only=True
    for key in ("model_state_dict", "optimizer_state_dict", "scheduler_state_dict", "rng_state"):
        assert key in checkpoint
    assert checkpoint["step"] > 0
    assert not any(k.startswith(("_orig_mod.", "module.")) for k in checkpoint["model_state_dict"])


def test_resume_continues_to_the_same_weights(tiny_config: Config, tmp_path: Path) -> None:
    straight = load_config(overrides=["train.max_steps=6"], base=tiny_config)
    fit(straight)
    first = load_config(
        overrides=["train.max_steps=3", f"train.out_dir={tmp_path / 'b'}"], base=tiny_config
    )
    fit(first)
    fit(load_config(overrides=["train.max_steps=6", "train.resume=auto"], base=first))
    a = load_checkpoint(Path(straight.train.out_dir) / "last.pt")["model_state_dict"]
    b = load_checkpoint(Path(first.train.out_dir) / "last.pt")["model_state_dict"]
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("content", [b"", b"not a checkpoint", b"PK\x03\x04truncated"])
def test_damaged_files_are_refused_with_the_path(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match="bad.pt"):
        load_checkpoint(path)


def test_init_from_loads_a_state_dict_exactly(tiny_config: Config, tmp_path: Path) -> None:
    """model.init_from: a saved state_dict fills a freshly built model bit for bit."""
    spec = build_data(tiny_config.data, tiny_config.train.seed).spec
    torch.manual_seed(0)
    source = build_model(tiny_config.model, spec)
    torch.save(source.state_dict(), tmp_path / "weights.pt")
    torch.manual_seed(1)
    model = build_model(tiny_config.model, spec)
    saved = source.state_dict()
    assert any(not torch.equal(v, saved[k]) for k, v in model.state_dict().items())
    report = init_from(model, tmp_path / "weights.pt", strict=True)
    assert report.mismatches() == "" and len(report.loaded) == len(saved)
    assert all(torch.equal(v, saved[k]) for k, v in model.state_dict().items())
