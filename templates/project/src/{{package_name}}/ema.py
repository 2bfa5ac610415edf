"""train.ema_decay (the ema feature): an exponential moving average of the weights.

After every optimizer step each floating-point parameter and buffer of the average moves
towards the trained model's: avg = decay * avg + (1 - decay) * weight. Buffers are
averaged too (BatchNorm's running statistics then match the averaged weights); integer
buffers (BatchNorm's step count) are copied. The decay warms up: at update t it is
min(train.ema_decay, (1 + t) / (train.ema_warmup_steps + t)), so the first averages follow
the weights instead of remembering the random initialisation.

With train.ema_eval (the default) evaluation, best.pt's choice, `evaluate`, `predict`
and `export` use the averaged weights; checkpoints hold both (`model_state_dict` trains
on, `ema_state_dict` and `ema_updates` continue the average on resume, exactly).

Under torchrun (DDP) every process holds the same weights after a step, so each keeps
its own identical average: no communication. FSDP is not supported: the average would
have to be sharded like the model; train.strategy=fsdp is refused unless train.ema_decay=0,
which trains without an average.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from .checkpoint import clean_state_dict
from .config import Config, TrainConfig


class WeightAverage:
    """The averaged copy of a model (`model`, in eval mode, never trained directly)."""

    def __init__(self, model: nn.Module, cfg: TrainConfig, saved: dict[str, Any]) -> None:
        self.decay, self.warmup_steps = cfg.ema_decay, cfg.ema_warmup_steps
        self.model = copy.deepcopy(model).eval().requires_grad_(False)
        self.updates = 0
        if "ema_state_dict" in saved:  # a resumed run continues its average
            self.model.load_state_dict(clean_state_dict(saved["ema_state_dict"]))
            self.updates = saved["ema_updates"]
        # state_dict() tensors share storage with the modules: updated in place below
        pairs = zip(self.model.state_dict().values(), model.state_dict().values(), strict=True)
        self.pairs = list(pairs)

    def current_decay(self) -> float:
        if self.warmup_steps == 0:
            return self.decay
        return min(self.decay, (1 + self.updates) / (self.warmup_steps + self.updates))

    @torch.no_grad()
    def update(self) -> None:
        """After an optimizer step: move the average towards the trained weights."""
        self.updates += 1
        weight = 1.0 - self.current_decay()
        for average, live in self.pairs:
            if average.is_floating_point():
                average.lerp_(live, weight)
            else:
                average.copy_(live)

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint holds of the average."""
        return {"ema_state_dict": self.model.state_dict(), "ema_updates": self.updates}


def inference_weights(checkpoint: dict[str, Any], config: Config) -> dict[str, Any]:
    """The checkpoint with the averaged weights as its model weights when train.ema_eval
    (and it has them), for evaluate, predict and export."""
    if config.train.ema_eval and "ema_state_dict" in checkpoint:
        return {**checkpoint, "model_state_dict": checkpoint["ema_state_dict"]}
    return checkpoint
