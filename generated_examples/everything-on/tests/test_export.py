"""`export` (the export feature): an exported program computes what the model computes."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from everything_on.cli import main
from everything_on.config import Config, component, load_config
from everything_on.data._synthetic import example_batch
from everything_on.evaluate import load_inference
from everything_on.train import fit


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
    exported = torch.export.load(target).module()  # positional, in the sidecar's order
    outputs = exported(*[batch[name] for name in sidecar["inputs"]])
    torch.testing.assert_close(outputs, expected, atol=1e-4, rtol=1e-4)
