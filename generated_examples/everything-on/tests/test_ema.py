"""train.ema_decay (the ema feature): the average follows the weights at the stated rate."""

from __future__ import annotations

import dataclasses

import torch

from everything_on.config import Config
from everything_on.data import build_data
from everything_on.ema import WeightAverage
from everything_on.models import build_model


def test_the_average_moves_by_one_minus_decay_and_resumes_exactly(tiny_config: Config) -> None:
    spec = build_data(tiny_config.data, tiny_config.train.seed).spec
    model = build_model(tiny_config.model, spec)
    cfg = dataclasses.replace(tiny_config.train, ema_decay=0.9, ema_warmup_steps=0)
    ema = WeightAverage(model, cfg, {})
    start = {k: v.clone() for k, v in ema.model.state_dict().items()}
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(1.0)
    ema.update()
    averaged = ema.model.state_dict()
    for name, _ in model.named_parameters():  # 0.9 * old + 0.1 * (old + 1)
        torch.testing.assert_close(averaged[name], start[name] + 0.1)
    resumed = WeightAverage(model, cfg, ema.state_dict())
    assert resumed.updates == 1
    assert all(torch.equal(v, averaged[k]) for k, v in resumed.model.state_dict().items())
