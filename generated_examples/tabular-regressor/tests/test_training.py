from __future__ import annotations

import csv
import json
from pathlib import Path

from tabular_regressor.cli import main
from tabular_regressor.config import Config, load_config
from tabular_regressor.smoke import stage_overfit
from tabular_regressor.train import fit


def test_training_writes_outputs(tiny_config: Config) -> None:
    result = fit(tiny_config)
    out = Path(tiny_config.train.out_dir)
    assert (out / "last.pt").exists() and (out / "best.pt").exists()
    assert (out / "config.toml").exists()
    rows = list(csv.DictReader(open(out / "metrics.csv", encoding="utf-8")))
    assert {row["split"] for row in rows} == {"train", "val"}
    assert result["num_samples"] > 0


def test_loss_falls_on_one_batch(tiny_config: Config) -> None:
    assert "->" in stage_overfit(tiny_config)


def test_evaluate_command_prints_json(tiny_config: Config, capsys) -> None:
    fit(load_config(overrides=["train.max_steps=2"], base=tiny_config))
    capsys.readouterr()
    checkpoint = Path(tiny_config.train.out_dir) / "last.pt"
    assert main(["evaluate", "--checkpoint", str(checkpoint), "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"loss", "num_samples"} <= result.keys()
    assert {"mae", "rmse", "r2"} <= result.keys()
    assert main(["evaluate", "--checkpoint", str(checkpoint), "--split", "test"]) == 1
    assert "no test split" in capsys.readouterr().err  # synthetic data has none
