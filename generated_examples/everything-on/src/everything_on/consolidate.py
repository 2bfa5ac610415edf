"""`consolidate`: a sharded checkpoint (train.strategy=fsdp, a .dcp directory) as one file
that evaluate, resume and any single process load like last.pt.

A command of its own, on top of the rest: it builds the trained model as evaluate does,
loads the shards through checkpoint.py (which reads them with sharding.py's format) and
writes the whole state with save_checkpoint. Nothing imports this module but cli.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from .checkpoint import CheckpointError, load_model_state, save_checkpoint
from .evaluate import trained_model
from .optim import build_optimizer
from .sharding import STATE_FILE


def consolidate(directory: str, output: str) -> dict[str, Any]:
    """Write the sharded checkpoint `directory` as the file `output`, gathered in this process."""
    out = Path(output)
    if not (Path(directory) / STATE_FILE).is_file():
        raise CheckpointError(f"{directory}: not a sharded checkpoint directory (.dcp)")
    if out.exists():
        raise CheckpointError(f"{out} already exists; choose another --output")
    checkpoint, config, _, model = trained_model(directory)
    optimizer = build_optimizer(model, config.train, torch.device("cpu"))
    load_model_state(model, checkpoint, directory, config.to_dict(), optimizer)
    weights = {"model_state_dict": model.state_dict()}
    optimizer_state = {"optimizer_state_dict": optimizer.state_dict()}
    save_checkpoint(out, {**checkpoint, **weights, **optimizer_state})  # like last.pt
    return {"step": checkpoint["step"], "parameters": sum(p.numel() for p in model.parameters())}
