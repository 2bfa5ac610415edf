"""Using a trained model: the task's metrics on known numbers, and an exported program
that computes what the model computes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tabular_regressor.cli import main
from tabular_regressor.config import TASK, Config, component, load_config
from tabular_regressor.data._synthetic import example_batch
from tabular_regressor.predict import load_inference
from tabular_regressor.tasks import DataSpec, get_task
from tabular_regressor.train import fit


def test_metrics_are_in_the_target_units() -> None:
    state = {"target_mean": 100.0, "target_std": 10.0}
    task = get_task(TASK).for_data(DataSpec(num_outputs=1), state)
    targets = torch.tensor([[0.0], [1.0], [-1.0], [0.0]])  # standardised: 100, 110, 90, 100
    outputs = torch.tensor([[0.5], [1.0], [-1.0], [-0.5]])  # 105, 110, 90, 95
    assert task.to_units(outputs).flatten().tolist() == [105.0, 110.0, 90.0, 95.0]
    result = task.summarise(task.metric_sums(outputs, targets), 4)
    assert result["mae"] == pytest.approx(2.5)  # (5 + 0 + 0 + 5) / 4, in target units
    assert result["rmse"] == pytest.approx(12.5**0.5)  # errors 5, 0, 0, 5
    assert result["r2"] == pytest.approx(1 - 0.5 / 2)  # scale-free


def test_exported_program_computes_what_the_model_computes(
    tiny_config: Config, tmp_path: Path, capsys
) -> None:
    fit(load_config(overrides=["train.max_steps=2"], base=tiny_config))
    checkpoint = str(Path(tiny_config.train.out_dir) / "last.pt")
    target = tmp_path / "model.pt2"
    model_module = component("model", tiny_config.model.name)
    status = main(
        ["export", "--checkpoint", checkpoint, "--format", "pt2", "--output", str(target)]
    )
    if hasattr(model_module, "NOT_EXPORTABLE"):  # the model kind says why not
        assert status == 1 and model_module.NOT_EXPORTABLE in capsys.readouterr().err
        assert not target.exists()
        return
    assert status == 0
    sidecar = json.loads(Path(f"{target}.json").read_text(encoding="utf-8"))
    assert sidecar["inputs"] and sidecar["check"]["max_difference"] <= 1e-4
    inference = load_inference(checkpoint, None, ["train.device=cpu"])
    batch = example_batch(inference.spec, 3)
    model = inference.model.eval()  # as load_inference returns it
    with torch.no_grad():
        expected = model(**batch)
    exported = torch.export.load(target).module()
    torch.testing.assert_close(exported(**batch), expected, atol=1e-4, rtol=1e-4)
