from __future__ import annotations

import csv
import json
from pathlib import Path

from everything_on.cli import main
from everything_on.config import Config, load_config
from everything_on.smoke import stage_overfit
from everything_on.train import fit


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
    assert {"accuracy", "macro_f1", "per_class", "confusion_matrix"} <= result.keys()
    assert Path(result["confusion_matrix_csv"]).is_file()
    assert main(["evaluate", "--checkpoint", str(checkpoint), "--split", "test"]) == 1
    assert "no test split" in capsys.readouterr().err  # synthetic data has none
