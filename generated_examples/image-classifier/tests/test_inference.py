"""Using a trained model: the task's metrics on known numbers, and an exported program
that computes what the model computes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from image_classifier.cli import main
from image_classifier.config import TASK, Config, component, load_config
from image_classifier.data._synthetic import example_batch
from image_classifier.predict import load_inference
from image_classifier.tasks import DataSpec, get_task
from image_classifier.train import fit


def test_metrics_of_a_known_confusion_matrix() -> None:
    task = get_task(TASK).for_data(DataSpec(num_outputs=3), {"classes": ["a", "b", "c"]})
    targets = torch.tensor([0, 0, 1, 1, 2, 2])
    predicted = torch.tensor([0, 1, 1, 1, 0, 2])
    outputs = torch.nn.functional.one_hot(predicted, 3).float()  # (6, 3) scores
    sums = task.metric_sums(outputs, targets)
    assert sums["confusion"].tolist() == [[1, 1, 0], [0, 2, 0], [1, 0, 1]]
    result = task.summarise(sums, 6)
    assert result["accuracy"] == pytest.approx(4 / 6)
    per_class = task.details(sums)["per_class"]
    assert per_class["b"] == pytest.approx(
        {"precision": 2 / 3, "recall": 1.0, "f1": 0.8, "support": 2}
    )
    assert result["macro_f1"] == pytest.approx((0.5 + 0.8 + 2 / 3) / 3)
    assert "top5_accuracy" not in result  # only from 5 classes


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
