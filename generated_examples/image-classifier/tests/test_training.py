from __future__ import annotations

import csv
import json
import tomllib
from pathlib import Path

import pytest
import torch

from image_classifier.cli import main
from image_classifier.config import Config, load_config
from image_classifier.runtime import autocast_dtype
from image_classifier.smoke import stage_overfit
from image_classifier.train import fit


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


@pytest.mark.parametrize(
    ("device", "bf16_supported", "requested", "expected"),
    [
        ("cpu", False, "auto", "bfloat16"),  # CPU autocast: bfloat16, never a GradScaler
        ("cuda", True, "auto", "bfloat16"),  # Ampere and later: no GradScaler needed
        ("cuda", False, "auto", "float16"),  # older GPUs: float16 with a GradScaler
        ("cuda", True, "float16", "float16"),  # an explicit choice is kept
        ("cuda", False, "bfloat16", "bfloat16"),
    ],
)
def test_amp_dtype_auto_follows_bfloat16_support(
    device: str, bf16_supported: bool, requested: str, expected: str
) -> None:
    assert autocast_dtype(device, bf16_supported, requested) == expected


def test_the_chosen_precision_is_printed_and_recorded(tiny_config: Config, capsys) -> None:
    fit(load_config(overrides=["train.max_steps=1", "train.amp=true"], base=tiny_config))
    assert "amp=True amp_dtype=bfloat16 matmul_precision=highest" in capsys.readouterr().out
    recorded = tomllib.loads((Path(tiny_config.train.out_dir) / "config.toml").read_text())
    assert recorded["train"]["amp_dtype"] == "bfloat16"  # on CPU; "auto" asked for it
    assert recorded["train"]["matmul_precision"] == "highest"  # TF32 is for CUDA only


def test_evaluate_command_prints_json(tiny_config: Config, capsys) -> None:
    fit(load_config(overrides=["train.max_steps=2"], base=tiny_config))
    capsys.readouterr()
    checkpoint = Path(tiny_config.train.out_dir) / "last.pt"
    assert main(["evaluate", "--checkpoint", str(checkpoint), "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"loss", "num_samples"} <= result.keys()
    assert {"accuracy", "macro_f1", "per_class", "confusion_matrix"} <= result.keys()
    assert main(["evaluate", "--checkpoint", str(checkpoint), "--split", "test"]) == 1
    assert "no test split" in capsys.readouterr().err  # synthetic data has none


def test_early_stopping_stops_and_its_count_is_in_the_checkpoint(tiny_config: Config) -> None:
    # no change of the metric beats a min_delta of 1e9: every evaluation after the first
    # counts as one without improvement, so patience 2 stops after epoch 3 of 5
    sets = ["train.epochs=5", "train.early_stopping_patience=2"]
    sets.append("train.early_stopping_min_delta=1e9")
    result = fit(load_config(overrides=sets, base=tiny_config))
    assert result["epoch"] == 3 and result["stopped_by"] is None
    last = Path(tiny_config.train.out_dir) / "last.pt"
    checkpoint = torch.load(last, map_location="cpu", weights_only=True)
    assert checkpoint["evals_without_improvement"] == 2
