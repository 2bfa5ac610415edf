"""Issue 16, starting from pretrained weights, on a generated image project: model.init_from
(a 10-class checkpoint into a 5-class model, a .safetensors file, strict refusal, resume
wins), model.freeze / model.freeze_bn and train.head_lr_multiplier.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers import generate, run_in_project, train_errors

pytestmark = pytest.mark.slow

PKG = "transfer_proj"
TINY = [
    "data.num_samples=48",
    "data.image_size=8",
    "model.width=4",
    "train.batch_size=16",
    "train.epochs=1",
    "train.device=cpu",
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("transfer")
    return generate(where, name="transfer-proj", features=("finetune", "optim"))  # head lr


@pytest.fixture(scope="module")
def pretrained(project: Path) -> Path:
    """last.pt of a short 10-class run: the weights the tests start from."""
    train(project, "train.out_dir=runs/pre", "data.num_classes=10", "train.max_steps=2")
    return project / "runs" / "pre" / "last.pt"


def train(project: Path, *overrides: str, ok: bool = True) -> str:
    sets = [arg for item in [*TINY, *overrides] for arg in ("--set", item)]
    result = run_in_project(project, "-m", PKG, "train", *sets)
    assert (result.returncode == 0) == ok, result.stdout + result.stderr
    return result.stdout + result.stderr


def weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, weights_only=True)["model_state_dict"]


# Builds runs in the project as `train` does, without training, and checks what
# init_from put into the model (stdout: the report table, then "OK").
INIT_CHECKS = """
import sys

import pytest
import torch
from safetensors.torch import save_file

from transfer_proj.checkpoint import CheckpointError
from transfer_proj.config import load_config
from transfer_proj.runtime import DistInfo
from transfer_proj.train import build_run

pre = torch.load(sys.argv[1], weights_only=True)["model_state_dict"]
tiny = [o for o in sys.argv[2:]]


def run(name, *overrides):
    config = load_config(overrides=[*tiny, f"train.out_dir=runs/{name}", *overrides])
    return build_run(config, DistInfo(), torch.device("cpu"))


five = run("five", "data.num_classes=5", f"model.init_from={sys.argv[1]}")
state = five.model.state_dict()
head = {"classifier.1.weight", "classifier.1.bias"}
assert all(torch.equal(state[k], pre[k]) for k in state if k not in head)
# width 8 x the cnn's 4x4 pooled grid (model.pool_size) = 128 inputs to the head
assert state["classifier.1.weight"].shape == (5, 128)
assert pre["classifier.1.weight"].shape == (10, 128)
assert five.state.step == 0 and five.optimizer.state_dict()["state"] == {}

save_file({f"module.{k}": v for k, v in pre.items()}, "pre.safetensors")
ten = run("ten", "model.init_from=pre.safetensors", "model.init_strict=true")
assert all(torch.equal(v, pre[k]) for k, v in ten.model.state_dict().items())

with pytest.raises(CheckpointError, match="2 re-initialised.*init_strict"):
    run("strict", "data.num_classes=5", f"model.init_from={sys.argv[1]}", "model.init_strict=true")
print("OK")
"""


def test_init_from_loads_what_fits_and_reinitialises_the_head(
    project: Path, pretrained: Path
) -> None:
    result = run_in_project(project, "-c", INIT_CHECKS, str(pretrained), *TINY)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "OK"
    start = next(i for i, line in enumerate(lines) if line.startswith("model.init_from"))
    table = "\n".join(lines[start : start + 5])  # the first report: into the 5-class model
    assert "loaded            24 tensors" in table
    assert "re-initialised     2 tensors  classifier.1.weight (10, 128) -> (5, 128)" in table
    assert "missing            0" in table and "unexpected         0" in table


def test_resume_wins_over_init_from_and_keeps_the_head_lr_group(
    project: Path, pretrained: Path
) -> None:
    """train.head_lr_multiplier makes a second parameter group; a resumed run continues its
    own weights and groups, ignoring model.init_from (said in one line)."""
    head_lr = ["train.out_dir=runs/resume", "train.head_lr_multiplier=5"]
    train(project, *head_lr, "train.max_steps=1")
    out = train(
        project, *head_lr, "train.max_steps=2", "train.resume=auto", f"model.init_from={pretrained}"
    )
    assert "model.init_from ignored: resuming from runs/resume/last.pt" in out
    assert "loaded" not in out and "resuming from runs/resume/last.pt at epoch 1, step 1" in out
    groups = torch.load(project / "runs/resume/last.pt", weights_only=True)["optimizer_state_dict"]
    sizes = [(len(g["params"]), g["initial_lr"]) for g in groups["param_groups"]]
    assert sizes == [(12, pytest.approx(0.001)), (2, pytest.approx(0.005))]


def test_weights_that_hardly_fit_are_said_to(
    project: Path, pretrained: Path, tmp_path: Path
) -> None:
    """Another model's file (here: two of the cnn's 26 tensors) loads what fits and says
    that almost nothing did, instead of a quiet "loaded 2 tensors"."""
    few = {k: v for k, v in list(weights(pretrained).items())[:2]}
    torch.save(few, tmp_path / "other.pt")
    out = train(project, "train.out_dir=runs/other", f"model.init_from={tmp_path / 'other.pt'}")
    assert "warning: model.init_from filled only 2 of the model's 26 tensors" in out


def test_bad_init_from_or_freeze_is_one_line(project: Path, tmp_path: Path) -> None:
    (tmp_path / "junk.safetensors").write_bytes(b"not safetensors")
    torch.save({"encoder.weight": torch.zeros(3)}, tmp_path / "alien.pt")  # nothing fits
    cases = {
        f"model.init_from={tmp_path / 'none.pt'}": "none.pt: no such checkpoint file",
        f"model.init_from={tmp_path / 'junk.safetensors'}": "not a readable .safetensors file",
        f"model.init_from={tmp_path}": f"{tmp_path} is a folder (it holds alien.pt, "
        "junk.safetensors): give the weights file itself",
        f"model.init_from={tmp_path / 'alien.pt'}": "none of its 1 tensors fits the model",
        "model.freeze=features,head": "'head'; the model's modules: features, pool, classifier",
        "model.freeze=features,classifier": "model.freeze leaves no parameter to train",
    }
    said = train_errors(project, PKG, tmp_path / "r", *cases)
    for message, reason in zip(said, cases.values(), strict=True):
        assert reason in message
    assert not (tmp_path / "r" / "last.pt").exists()


def test_freeze_keeps_frozen_parts_bit_identical_and_out_of_the_optimizer(
    project: Path, pretrained: Path
) -> None:
    """Frozen features (BatchNorm statistics included, model.freeze_bn) stay as loaded; only
    the head is optimised, at train.head_lr_multiplier x train.lr."""
    pre = weights(pretrained)
    frozen = ["model.freeze=features", f"model.init_from={pretrained}", "train.max_steps=3"]
    train(project, "train.out_dir=runs/frozen", "train.head_lr_multiplier=10", *frozen)
    saved = torch.load(project / "runs/frozen/last.pt", weights_only=True)
    after = saved["model_state_dict"]
    features = [k for k in after if k.startswith("features.")]
    assert len(features) == 24 and all(torch.equal(after[k], pre[k]) for k in features)
    assert not torch.equal(after["classifier.1.weight"], pre["classifier.1.weight"])
    groups = saved["optimizer_state_dict"]["param_groups"]
    assert [(len(g["params"]), g["initial_lr"]) for g in groups] == [(2, pytest.approx(0.01))]

    train(project, "train.out_dir=runs/bn", "model.freeze_bn=false", *frozen)
    after = weights(project / "runs/bn/last.pt")
    assert torch.equal(after["features.0.layers.0.weight"], pre["features.0.layers.0.weight"])
    assert not torch.equal(
        after["features.0.layers.1.running_mean"], pre["features.0.layers.1.running_mean"]
    )
