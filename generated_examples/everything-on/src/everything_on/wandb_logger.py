"""train.logger=wandb (the wandb feature): the run tracked in Weights & Biases
(pip install -e '.[wandb]'); with WANDB_MODE=offline it stays on this machine, for
`wandb sync` later."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .checkpoint import TrainState
from .monitor import Tracker, rows_up_to


class WandbTracker(Tracker):
    """train.logger=wandb: the resolved config (and the run directory), every metrics row
    as SPLIT/KEY at its training step, and config.toml, in one W&B run per out_dir, whose
    files are in OUT_DIR/wandb. Its id is saved with every checkpoint, so a resumed or
    requeued run continues the same W&B run; the project is WANDB_PROJECT or the package.

    Every step once: a killed process loses what W&B had not written out yet (offline, up
    to x_transaction_log_flush_interval, 15 s), so a resumed run first sends again the rows
    metrics.csv keeps (up to its checkpoint), then the steps it trains. W&B keeps a resumed
    run's steps only above the last one it holds: each step ends up in the run once, with
    no gap. A run that raises finishes as failed.
    """

    def __init__(self, out_dir: Path, state: TrainState) -> None:
        try:
            import wandb
        except ImportError as exc:
            raise RuntimeError("train.logger=wandb needs wandb: pip install -e '.[wandb]'") from exc
        (out_dir / "wandb").mkdir(parents=True, exist_ok=True)
        self.out_dir, resumed = out_dir, bool(state.wandb_run_id)
        try:
            self.run = wandb.init(
                project=os.environ.get("WANDB_PROJECT", __package__),
                dir=out_dir,
                id=state.wandb_run_id or None,
                resume="allow",
                name=out_dir.name,
            )
        except wandb.errors.Error as exc:  # no API key, no network: one line, no traceback
            reason = str(exc).strip().partition("\n")[0]
            raise RuntimeError(
                f"W&B cannot start a run ({reason}): log in with `wandb login`, or keep the run "
                "on this machine with WANDB_MODE=offline"
            ) from None
        state.wandb_run_id = self.run.id  # saved with every checkpoint from here on
        if resumed and (out_dir / "metrics.csv").exists():
            self.replay(out_dir / "metrics.csv", state.step)

    def replay(self, path: Path, step: int) -> None:
        """Send the rows of metrics.csv up to `step` (the checkpoint's) again."""
        rows, _ = rows_up_to(path, step)
        for row in rows:
            split, at = row.pop("split"), int(row.pop("step"))
            numbers = {k: float(v) for k, v in row.items() if k != "epoch" and v}
            self.log_metrics(split, numbers, at)

    def log_params(self, values: dict[str, Any]) -> None:
        run_dir = str(self.out_dir.resolve())
        self.run.config.update({**values, "run_dir": run_dir}, allow_val_change=True)
        self.run.save(str(self.out_dir / "config.toml"), base_path=run_dir, policy="now")

    def log_metrics(self, split: str, row: dict[str, Any], step: int) -> None:
        numbers = {f"{split}/{k}": v for k, v in row.items() if isinstance(v, (int, float))}
        self.run.log(numbers, step=step)

    def close(self, interrupted: bool) -> None:
        if interrupted:  # stopped by a signal: to be resumed
            self.run.mark_preempting()
        self.run.finish()

    def fail(self) -> None:
        self.run.finish(exit_code=1)  # the W&B run is marked failed
