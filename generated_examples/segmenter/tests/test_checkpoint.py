from __future__ import annotations

from pathlib import Path

import pytest
import torch

from segmenter.checkpoint import CheckpointError, load_checkpoint
from segmenter.config import Config, load_config
from segmenter.train import fit


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
