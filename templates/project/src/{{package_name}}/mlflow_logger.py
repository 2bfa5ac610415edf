"""train.logger=mlflow (the mlflow feature): the run tracked in MLflow
(pip install -e '.[mlflow]')."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from .checkpoint import TrainState
from .monitor import Tracker


class MlflowTracker(Tracker):
    """train.logger=mlflow: the resolved config as params, every metrics row as metrics,
    and best.pt, last.pt (or .dcp) and config.toml as artifacts, one MLflow run per out_dir.

    The store is MLFLOW_TRACKING_URI when set (a tracking server), else a SQLite database in
    mlruns/ of the working directory, with the artifacts beside it.
    """

    def __init__(self, out_dir: Path, state: TrainState) -> None:
        try:
            from mlflow import MlflowClient
        except ImportError as exc:
            raise RuntimeError(
                "train.logger=mlflow needs mlflow: pip install -e '.[mlflow]'"
            ) from exc
        local = Path("mlruns").resolve()
        uri = os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{local / 'mlflow.db'}"
        if uri.startswith("sqlite:///"):
            Path(uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        self.out_dir, self.client = out_dir, MlflowClient(uri)
        run_id = state.mlflow_run_id
        if run_id and self._exists(run_id):  # a resumed run goes on in its MLflow run
            self.run_id = run_id
            self.client.update_run(run_id, status="RUNNING")
        else:
            experiment = self.client.get_experiment_by_name(__package__)
            if experiment is None:  # the artifacts beside the local store, not in the cwd
                artifacts = (local / "artifacts").as_uri()
                experiment_id = self.client.create_experiment(__package__, artifacts)
            else:
                experiment_id = experiment.experiment_id
            self.run_id = self.client.create_run(experiment_id, run_name=out_dir.name).info.run_id
        state.mlflow_run_id = self.run_id  # saved with every checkpoint from here on

    def _exists(self, run_id: str) -> bool:
        try:
            self.client.get_run(run_id)
        except Exception:  # MlflowException: not in this store (another tracking URI)
            return False
        return True

    def log_params(self, values: dict[str, Any]) -> None:
        """Once per key: MLflow refuses to change a param (a resumed run keeps the first)."""
        from mlflow.entities import Param

        logged = self.client.get_run(self.run_id).data.params
        flat = {"task": values["task"]} | {
            f"{section}.{key}": value
            for section in ("data", "model", "train")
            for key, value in values[section].items()
        }
        params = [Param(k, str(v)) for k, v in flat.items() if k not in logged]
        self.client.log_batch(self.run_id, params=params)

    def log_metrics(self, split: str, row: dict[str, Any], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [
            Metric(f"{split}/{key}", value, now, step)
            for key, value in row.items()
            if isinstance(value, float)
        ]
        self.client.log_batch(self.run_id, metrics=metrics)

    def close(self, interrupted: bool) -> None:
        for name in ("best.pt", "last.pt", "best.dcp", "last.dcp", "config.toml"):
            path = self.out_dir / name
            if path.is_dir():  # a sharded checkpoint (train.strategy=fsdp)
                self.client.log_artifacts(self.run_id, str(path), name)
            elif path.exists():
                self.client.log_artifact(self.run_id, str(path))
        self.client.set_terminated(self.run_id, "KILLED" if interrupted else "FINISHED")

    def fail(self) -> None:
        """Training raised: the MLflow run ends FAILED (resuming sets it RUNNING again)."""
        self.client.set_terminated(self.run_id, "FAILED")
