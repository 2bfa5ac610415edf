"""model.init_from (the finetune feature): weights from another run or file."""

from __future__ import annotations

from pathlib import Path

import torch

from everything_on.config import Config
from everything_on.data import build_data
from everything_on.models import build_model
from everything_on.transfer import init_from


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
