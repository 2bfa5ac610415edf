"""Issue 31, Hugging Face vision backbones: the `hf-vision` model kind with the
`image-folder` dataset kind's `data.processor`, on tiny backbones of two families (a ViT
and a ResNet) built here and saved with `save_pretrained` beside their image processors,
offline. The loss falls; the processor's size and statistics are in the checkpoint, and
evaluate, predict and export prepare images from the checkpoint alone (the processor's
folder is gone by then), and rebuild the model from the backbone's config saved in the
checkpoint (the backbone's folder may be gone too); predict on the raw files gives
evaluate's predictions;
train.freeze_epochs trains the head only, then everything, and a run killed before the
unfreeze and resumed is bit-identical; bad backbones are refused in one line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import generate, kill_tree_once
from PIL import Image

pytest.importorskip("transformers", reason="the generated project's hf extra")
pytestmark = pytest.mark.slow

PKG = "hfv_proj"
CLASSES = ("red", "green", "blue", "grey")
COLOURS = ((200, 50, 50), (50, 200, 50), (50, 50, 200), (128, 128, 128))
BASE = [
    "data.num_workers=0",
    "data.augment=standard",
    "train.batch_size=8",
    "train.epochs=3",
    "train.device=cpu",
    "train.checkpoint_every=3",
    "train.log_every=4",
    "train.lr=0.003",
]


def write_images(root: Path) -> None:
    """4 colour classes of noisy 20x24 images: 16 per class to train (8 steps of 8 per
    epoch), 4 per class for validation."""
    for split, count in (("train", 16), ("val", 4)):
        for c, (name, colour) in enumerate(zip(CLASSES, COLOURS, strict=True)):
            (root / split / name).mkdir(parents=True)
            for i in range(count):
                noise = Image.effect_noise((20, 24), 30 + i + c).convert("RGB")
                Image.blend(Image.new("RGB", (20, 24), colour), noise, 0.3).save(
                    root / split / name / f"{i}.png"
                )


def save_backbones(root: Path) -> dict[str, Path]:
    """A tiny ViT (with its pooler) and a tiny ResNet, each in a model folder, and their
    image processors in folders of their own (removed after training)."""
    from transformers import (
        BertConfig,
        BertModel,
        ConvNextImageProcessor,
        ResNetConfig,
        ResNetModel,
        ViTConfig,
        ViTImageProcessor,
        ViTModel,
    )

    torch.manual_seed(0)
    vit = ViTConfig(
        image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64,
    )  # fmt: skip
    ViTModel(vit).save_pretrained(root / "vit")
    ViTImageProcessor(
        size={"height": 16, "width": 16}, image_mean=[0.5, 0.4, 0.3], image_std=[0.2, 0.25, 0.3]
    ).save_pretrained(root / "vit-processor")
    resnet = ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic")
    ResNetModel(resnet).save_pretrained(root / "resnet")
    ConvNextImageProcessor(size={"shortest_edge": 24}, resample=3).save_pretrained(
        root / "resnet-processor"
    )
    bert = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2)
    BertModel(bert).save_pretrained(root / "bert")
    return {
        name: root / name for name in ("vit", "vit-processor", "resnet", "resnet-processor", "bert")
    }


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = generate(
        tmp_path_factory.mktemp("hfv"),
        name="hfv-proj",
        task="image-classification",
        model="hf-vision",
        dataset="image-folder",
        features=("finetune", "export", "optim"),
    )
    write_images(path / "images")
    save_backbones(path / "backbones")
    return path


def env(project: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")


def run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", PKG, *args], cwd=project, env=env(project),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def sets(*values: str) -> list[str]:
    return [a for v in values for a in ("--set", v)]


def family(project: Path, name: str) -> list[str]:
    root = project / "backbones"
    return [
        f"data.root={project / 'images'}",
        f"model.pretrained={root / name}",
        f"data.processor={root / (name + '-processor')}",
    ]


def train(project: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run(project, "train", *sets(*BASE, f"train.out_dir={out}", *extra))


def weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=True)["model_state_dict"]


def pretrained(folder: Path) -> dict[str, torch.Tensor]:
    from transformers import AutoModel

    return {f"backbone.{k}": v for k, v in AutoModel.from_pretrained(folder).state_dict().items()}


def kill_after(project: Path, out: Path, step: int, extra: list[str]) -> None:
    """Start training, SIGKILL it as soon as the step-`step` checkpoint exists."""
    args = sets(*BASE, f"train.out_dir={out}", *extra)
    proc = subprocess.Popen(
        [sys.executable, "-m", PKG, "train", *args], cwd=project, env=env(project),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    kill_tree_once(proc, out / f"step-{step:08d}.pt")


@pytest.fixture(scope="module")
def vit_run(project: Path) -> Path:
    """3 epochs of the tiny ViT, the first with the backbone frozen; then the processor's
    folder is removed: everything after training reads the checkpoint."""
    out = project / "runs" / "vit"
    extra = [*family(project, "vit"), "train.freeze_epochs=1", "train.head_lr_multiplier=3"]
    result = train(project, out, *extra)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    shutil.copytree(project / "backbones" / "vit-processor", project / "vit-processor-copy")
    shutil.rmtree(project / "backbones" / "vit-processor")
    return out


def test_project_renders_and_its_own_tests_pass(project: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=project, env=env(project), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:]


def test_vit_loss_falls_and_the_processor_is_in_the_checkpoint(
    project: Path, vit_run: Path
) -> None:
    rows = [line.split(",") for line in (vit_run / "metrics.csv").read_text().splitlines()]
    header, rows = rows[0], rows[1:]
    loss = header.index("loss")
    val = [float(r[loss]) for r in rows if r[header.index("split")] == "val"]
    assert len(val) == 3 and val[-1] < val[0], val
    saved = torch.load(vit_run / "last.pt", weights_only=True)
    state = saved["data_state"]
    assert state["image_size"] == 16 and state["resample"] == int(Image.Resampling.BILINEAR)
    torch.testing.assert_close(state["mean"], torch.tensor([0.5, 0.4, 0.3]))
    torch.testing.assert_close(state["std"], torch.tensor([0.2, 0.25, 0.3]))
    assert state["processor"].endswith("vit-processor")
    assert state["classes"] == sorted(CLASSES)


def test_predict_on_raw_files_gives_evaluates_predictions(project: Path, vit_run: Path) -> None:
    checkpoint = str(vit_run / "last.pt")
    result = run(project, "evaluate", "--checkpoint", checkpoint, "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads(result.stdout.splitlines()[-1])
    predicted = run(project, "predict", "--checkpoint", checkpoint, str(project / "images" / "val"))
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    records = [json.loads(line) for line in predicted.stdout.splitlines() if line.startswith("{")]
    assert len(records) == metrics["num_samples"] == 16
    hits = [r["label"] == Path(r["input"]).parent.name for r in records]
    assert sum(hits) / len(hits) == pytest.approx(metrics["accuracy"])
    # the very scores of evaluation's dataset (built from the checkpoint's state)
    script = f"""
import json, torch
from {PKG}.config import config_from_dict
from {PKG}.data import build_data
from {PKG}.models import build_model
saved = torch.load({checkpoint!r}, weights_only=True)
config = config_from_dict(saved["config"])
bundle = build_data(config.data, 0, saved["data_state"])
model = build_model(config.model, bundle.spec).eval()
model.load_state_dict(saved["model_state_dict"])
with torch.no_grad():
    inputs = [bundle.val[i]["inputs"][None] for i in range(len(bundle.val))]
    probs = [model(x).softmax(-1)[0].tolist() for x in inputs]
files = bundle.val.cache.decoded.sources[len(bundle.train) :]  # after the training split's
print(json.dumps([[str(p) for p in files], probs]))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=project, env=env(project),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    files, probs = json.loads(out.stdout.splitlines()[-1])
    classes = sorted(CLASSES)
    by_file = {Path(f).resolve(): p for f, p in zip(files, probs, strict=True)}
    for record in records:
        expected = by_file[Path(record["input"]).resolve()]
        top = record["top_k"][0]
        assert top["label"] == classes[max(range(4), key=expected.__getitem__)]
        assert top["probability"] == pytest.approx(max(expected), abs=1e-5)


def test_export_onnx_from_the_checkpoint_alone(project: Path, vit_run: Path) -> None:
    result = run(project, "export", "--checkpoint", str(vit_run / "last.pt"), "--format", "onnx")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    sidecar = json.loads((vit_run / "last.onnx.json").read_text())
    steps = sidecar["preprocessing"]
    assert steps["resize"] == [16, 16] and steps["resample"] == "bilinear"
    assert steps["normalize"]["mean"] == pytest.approx([0.5, 0.4, 0.3])


def records_of(result: subprocess.CompletedProcess[str]) -> list[dict]:
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_evaluate_predict_export_need_only_the_checkpoint(
    project: Path, vit_run: Path, tmp_path: Path
) -> None:
    """The backbone's config is in the checkpoint: with the backbone's folder (and the
    processor's) gone after training, evaluate, predict and export rebuild the model with
    AutoModel.from_config; predict gives what it gave with the folder, and evaluate's
    confusion matrix counts predict's labels."""
    shutil.copytree(project / "backbones" / "vit", tmp_path / "vit")
    shutil.copytree(project / "vit-processor-copy", tmp_path / "vit-processor")
    out = tmp_path / "run"
    extra = [
        f"data.root={project / 'images'}",
        f"model.pretrained={tmp_path / 'vit'}",
        f"data.processor={tmp_path / 'vit-processor'}",
        "train.max_steps=4",
    ]
    result = train(project, out, *extra)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    checkpoint = str(out / "last.pt")
    val = str(project / "images" / "val")
    before = records_of(run(project, "predict", "--checkpoint", checkpoint, val))
    shutil.rmtree(tmp_path / "vit")
    shutil.rmtree(tmp_path / "vit-processor")
    evaluated = run(project, "evaluate", "--checkpoint", checkpoint, "--json")
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    metrics = json.loads(evaluated.stdout.splitlines()[-1])
    after = records_of(run(project, "predict", "--checkpoint", checkpoint, val))
    assert len(after) == 16
    assert sorted(after, key=lambda r: r["input"]) == sorted(before, key=lambda r: r["input"])
    classes = sorted(CLASSES)
    pairs = [(Path(r["input"]).parent.name, r["label"]) for r in after]  # (true, predicted)
    counts = [[pairs.count((true, label)) for label in classes] for true in classes]
    assert metrics["confusion_matrix"] == counts
    exported = run(project, "export", "--checkpoint", checkpoint, "--format", "onnx")
    assert exported.returncode == 0, exported.stdout[-2000:] + exported.stderr[-3000:]
    assert (out / "last.onnx").is_file()
    build = torch.load(checkpoint, weights_only=True)["model_build"]
    assert build["config"]["model_type"] == "vit" and build["config"]["hidden_size"] == 32


def test_freeze_epochs_then_unfreeze_and_resume_across_it_is_exact(
    project: Path, vit_run: Path, tmp_path: Path
) -> None:
    """Epoch 1 (steps 1-8) trains the head only; a run killed at step 6 and resumed ends
    at step 20 bit-identical to an uninterrupted one, augmentation included."""
    shutil.copytree(project / "vit-processor-copy", tmp_path / "vit-processor")
    extra = [
        f"data.root={project / 'images'}",
        f"model.pretrained={project / 'backbones' / 'vit'}",
        f"data.processor={tmp_path / 'vit-processor'}",
        "train.freeze_epochs=1",
        "train.max_steps=20",
        "data.cache=none",  # slower steps: the kill lands mid-run
    ]
    reference = train(project, tmp_path / "reference", *extra)
    assert reference.returncode == 0, reference.stderr[-3000:]
    out = tmp_path / "run"
    kill_after(project, out, 6, extra)
    killed = torch.load(out / "last.pt", weights_only=True)
    assert 6 <= killed["step"] < 8, killed["step"]  # before the unfreeze
    start = pretrained(project / "backbones" / "vit")
    head = ("classifier.weight", "classifier.bias")
    frozen = {k: v for k, v in killed["model_state_dict"].items() if k not in head}
    assert all(torch.equal(v, start[k]) for k, v in frozen.items())  # the body: as loaded
    resumed = train(project, out, *extra, "train.resume=auto")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    got, want = weights(out / "last.pt"), weights(tmp_path / "reference" / "last.pt")
    assert [k for k in want if not torch.equal(got[k], want[k])] == []
    patches = "backbone.embeddings.patch_embeddings.projection.weight"
    assert not torch.equal(want[patches], start[patches])  # then the body trained


def test_resnet_trains_with_frozen_batch_norm_then_exports(project: Path, tmp_path: Path) -> None:
    """The conv family: ResNet's pooler output, 24-pixel images from its processor
    (bicubic), BatchNorm statistics kept while the body is frozen, then adapting; onnx."""
    out = tmp_path / "resnet"
    extra = [*family(project, "resnet"), "train.freeze_epochs=1", "train.max_steps=8"]
    result = train(project, out, *extra)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    saved = torch.load(out / "last.pt", weights_only=True)
    assert saved["data_state"]["image_size"] == 24 and saved["data_state"]["resample"] == 3
    start = pretrained(project / "backbones" / "resnet")
    stats = [k for k in start if k.endswith(("running_mean", "running_var"))]
    assert stats and all(torch.equal(saved["model_state_dict"][k], start[k]) for k in stats)
    more = train(project, tmp_path / "resnet2", *extra[:-1], "train.max_steps=12")
    assert more.returncode == 0, more.stderr[-3000:]
    after = weights(tmp_path / "resnet2" / "last.pt")
    assert any(not torch.equal(after[k], start[k]) for k in stats)  # unfrozen: they adapt
    exported = run(project, "export", "--checkpoint", str(out / "last.pt"), "--format", "onnx")
    assert exported.returncode == 0, exported.stdout[-2000:] + exported.stderr[-3000:]


@pytest.mark.parametrize(
    ("pretrained", "needle"),
    [("backbones/missing", "no such directory"), ("backbones/bert", "not a vision backbone")],
)
def test_bad_backbone_is_one_line(
    project: Path, tmp_path: Path, pretrained: str, needle: str
) -> None:
    result = train(
        project, tmp_path, f"model.pretrained={project / pretrained}", "train.max_steps=1"
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and needle in lines[0] and "Traceback" not in result.stderr
    ), result.stderr
