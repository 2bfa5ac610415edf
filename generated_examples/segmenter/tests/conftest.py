"""Shared fixtures: a tiny, fast configuration of this project."""

from __future__ import annotations

from pathlib import Path

import pytest

from segmenter.config import Config, load_config


@pytest.fixture
def tiny_config(tmp_path: Path) -> Config:
    return load_config(
        overrides=[
            "data.num_samples=64",
            "train.batch_size=8",
            "train.epochs=1",
            "train.log_every=2",
            "train.device=cpu",
            "train.compile=false",
            f"train.out_dir={tmp_path / 'run'}",
        ]
    )
