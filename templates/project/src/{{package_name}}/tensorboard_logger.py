"""train.logger=tensorboard (the tensorboard feature): metrics as TensorBoard scalars
(pip install -e '.[tensorboard]')."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .monitor import Tracker


class TensorBoardTracker(Tracker):
    """Every metrics row as scalars `SPLIT/KEY` in OUT_DIR/tensorboard."""

    def __init__(self, log_dir: Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:
            raise RuntimeError(
                "train.logger=tensorboard needs tensorboard: pip install -e '.[tensorboard]'"
            ) from exc
        self.board = SummaryWriter(str(log_dir))

    def log_metrics(self, split: str, row: dict[str, Any], step: int) -> None:
        for key, value in row.items():
            if isinstance(value, float):
                self.board.add_scalar(f"{split}/{key}", value, step)
        self.board.flush()

    def close(self, interrupted: bool) -> None:
        self.board.close()
