"""Issue 32, part 2: the segmentation task, proven on generated projects.

A segmentation project (the `unet` model, the `image-masks` dataset) renders clean and
holds nothing of the other tasks, smoke-trains, passes its own tests; bad mask folders are
one-line errors; `predict` writes the masks `evaluate`'s model gives (argmax per pixel);
augmentation moves an image and its mask alike; a run killed with SIGKILL and resumed with
`train.resume=auto` (augmenting, with loader workers) ends bit-identical to one that was not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tomllib
import torch
from helpers import SLOW_DATASET, generate, kill_tree_once, run_in_project, train_errors
from PIL import Image

PKG = "seg_proj"
SIZE = 16  # data.image_size of the runs here: small, so that training is quick

# The image-masks kind with its training split fetched slowly (a SIGKILL lands mid-run).
SLOW_MASKS = """
from .image_masks import Options, build as build_masks
from .slowsynthetic import Slow


def build(cfg, seed, state=None):
    bundle = build_masks(cfg, seed, state)
    bundle.train = Slow(bundle.train)
    return bundle
"""


def write_masks(
    root: Path, counts: dict[str, int], noise: bool = True, side: int | None = None
) -> Path:
    """root/<split>/images/*.png|jpg with masks/<stem>.png: a square of class 1 or 2 on
    background 0 and an unlabelled (255) top row; the image shows the class as its grey
    level (class * 100 + 20), with pixel noise unless `noise` is off; `side`: all images
    side x side pixels (else 24 wide, 20 to 22 high)."""
    rng = np.random.default_rng(0)
    for split, count in counts.items():
        (root / split / "images").mkdir(parents=True)
        (root / split / "masks").mkdir(parents=True)
        for i in range(count):
            height, width = (side, side) if side else (20 + i % 3, 24)
            mask = np.zeros((height, width), np.uint8)
            y, x = rng.integers(1, height - 7), rng.integers(0, width - 7)
            mask[y : y + 7, x : x + 7] = 1 + i % 2
            image = (mask.astype(np.int64) * 100 + 20)[..., None].repeat(3, axis=2)
            if noise:
                image = image + rng.integers(-15, 16, image.shape)
            mask[0, :] = 255
            suffix = ".jpg" if noise and i % 3 == 0 else ".png"
            pixels = image.clip(0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / split / "images" / f"img{i:03d}{suffix}")
            Image.fromarray(mask, mode="L").save(root / split / "masks" / f"img{i:03d}.png")
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = generate(
        tmp_path_factory.mktemp("seg"),
        name="seg-proj",
        task="segmentation",
        dataset="image-masks",
        features=("export",),
    )
    (path / "src" / PKG / "data" / "slowsynthetic.py").write_text(SLOW_DATASET)
    (path / "src" / PKG / "data" / "slowmasks.py").write_text(SLOW_MASKS)
    return path


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    counts = {"train": 48, "val": 8, "test": 4}
    return write_masks(tmp_path_factory.mktemp("masks") / "data", counts)


def real_data(root: Path) -> list[str]:
    sets = [f"data.root={root}", "data.num_classes=3", f"data.image_size={SIZE}"]
    sets += ["model.width=8", "train.batch_size=8", "train.device=cpu", "data.num_workers=0"]
    return [arg for setting in sets for arg in ("--set", setting)]


def test_renders_clean_and_holds_nothing_of_the_other_tasks(project: Path, tmp_path: Path) -> None:
    config = tomllib.loads((project / "configs/default.toml").read_text(encoding="utf-8"))
    assert (config["task"], config["model"]["name"], config["data"]["name"]) == (
        "segmentation",
        "unet",
        "image_masks",
    )
    assert config["train"]["monitor"] == "miou" and config["data"]["ignore_index"] == 255
    files = [str(p) for p in project.rglob("*.py") if not p.name.startswith("slow")]  # ours
    subprocess.run(["black", "--check", "-q", "-l", "100", *files], check=True)
    subprocess.run(["ruff", "check", "-q", "--no-cache", *files], check=True)
    source = "\n".join(p.read_text() for p in (project / "src").rglob("*.py"))
    for other in ("top5", "macro_f1", "Classification", "Regression", "target_mean"):
        assert other not in source, other
    classifier = generate(tmp_path, name="plain")  # and the default project has no trace of it
    source = "\n".join(p.read_text() for p in (classifier / "src").rglob("*.py"))
    for mark in ("miou", "ignore_index", "Segmentation", "mask-dir"):
        assert mark not in source, mark


def test_bad_mask_folders_are_one_line_errors(project: Path, tmp_path: Path) -> None:
    roots = {}
    for case in ("missing", "size", "palette", "id"):
        roots[case] = write_masks(tmp_path / case, {"train": 6, "val": 2})
    (roots["missing"] / "train/masks/img003.png").unlink()
    Image.new("L", (7, 5)).save(roots["size"] / "train/masks/img001.png")
    said = train_errors(
        project,
        PKG,
        tmp_path / "out",
        f"data.root={roots['missing']}",
        f"data.root={roots['size']}",
        f'data.root={roots["palette"]} data.palette=["#000000","#010101","#020202"]',
        f"data.root={roots['id']} data.num_classes=2",
    )
    assert "img003.jpg has no mask" in said[0] and "masks/img003.png" in said[0]
    assert "img001.png is 7x5 but its image is 24x21" in said[1]
    assert "has colours not in data.palette: #ffffff" in said[2]  # the 255 row
    assert "has ids [2]: not a class (0..1" in said[3]


@pytest.mark.slow
def test_smoke_trains_and_project_tests_pass(project: Path) -> None:
    smoke = run_in_project(project, "-m", PKG, "smoke", "--steps", "3")
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert smoke.stdout.count("PASS") == 4
    tests = run_in_project(project, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]


# Inside the project: evaluate's model and data (the checkpoint's config and state), the
# argmax masks of the validation images, next to the PNGs predict wrote for the same files.
ARGMAX = """
import sys
import numpy as np
import torch
from PIL import Image
from seg_proj import checkpoint as ckpt
from seg_proj.data import build_data
from seg_proj.evaluate import trained_model

checkpoint, config, _, model = trained_model(sys.argv[1], None, [])
ckpt.load_model_state(model, checkpoint, sys.argv[1], config.to_dict())
model.eval()
val = build_data(config.data, config.train.seed, checkpoint["data_state"]).val
with torch.no_grad():
    inputs = torch.stack([val[i]["inputs"] for i in range(len(val))])
    expected = model(inputs).argmax(dim=1)
names = sys.argv[2:]
written = torch.stack([torch.from_numpy(np.array(Image.open(n))).long() for n in names])
print(len(names), int((written != expected).sum()), Image.open(names[0]).mode)
"""


@pytest.mark.slow
def test_predict_writes_the_masks_of_evaluates_argmax(
    project: Path, root: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = [*real_data(root), "--set", f"train.out_dir={out}", "--set", "train.max_steps=6"]
    trained = run_in_project(project, "-m", PKG, "train", *args)
    assert trained.returncode == 0, trained.stderr
    evaluated = run_in_project(
        project, "-m", PKG, "evaluate", "--checkpoint", str(out / "last.pt"), "--json"
    )
    assert evaluated.returncode == 0, evaluated.stderr
    result = json.loads(evaluated.stdout.strip().splitlines()[-1])
    assert {"pixel_accuracy", "miou", "per_class"} <= result.keys()
    assert sum(c["pixels"] for c in result["per_class"].values()) == 8 * SIZE * (SIZE - 1)
    masks = tmp_path / "masks"
    predicted = run_in_project(
        project, "-m", PKG, "predict", "--checkpoint", str(out / "last.pt"),
        str(root / "val" / "images"), "--mask-dir", str(masks), "--overlay",
    )  # fmt: skip
    assert predicted.returncode == 0, predicted.stderr
    records = [json.loads(line) for line in predicted.stdout.splitlines()]
    assert [Path(r["input"]).stem for r in records] == [f"img{i:03d}" for i in range(8)]
    assert all(Path(r["overlay"]).is_file() for r in records)
    assert all(abs(sum(r["class_shares"].values()) - 1) < 1e-9 for r in records)
    compared = run_in_project(project, "-c", ARGMAX, str(out / "last.pt"),
                              *[r["mask"] for r in records])  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    assert compared.stdout.split() == ["8", "0", "P"]  # every pixel of every mask equal


# Inside the project: a training item of images that show their class as a grey level,
# augmented: the mask follows the image (crop, scale and flip alike), and the image gets
# exactly what the classifier's augmentation would give it.
AUGMENTED = """
import sys
import torch
from seg_proj.data import build_data
from seg_proj.data._augment import augment
from seg_proj.data.image_masks import Options

sets = dict(name="image_masks", root=sys.argv[1], num_classes=3, image_size=16)
plain = build_data(Options(**sets), seed=3)
augmented = build_data(Options(**sets, augment="light"), seed=3)
augmented.train.set_epoch(1)
ds = augmented.train
agree = interior = changed = 0
for i in range(len(ds)):
    item, base = ds[i], plain.train[i]
    image = item["inputs"] * ds.std + ds.mean  # (3, S, S) back in [0, 1]
    same = augment(ds.images[i].float() / 255.0, "light", True, ds.seeds.generator(i))
    assert torch.allclose(image, same, atol=1e-6)
    mask = item["targets"]
    shown = ((image[0] * 255 - 20) / 100).round().long()  # the class the image shows
    pad = torch.nn.functional.pad(mask[None, None].float(), (1, 1, 1, 1), mode="replicate")
    flat = torch.nn.functional.max_pool2d(pad, 3, 1) == -torch.nn.functional.max_pool2d(-pad, 3, 1)
    keep = flat[0, 0] & (mask != 255)
    agree += int((shown[keep] == mask[keep]).sum())
    interior += int(keep.sum())
    changed += int(not torch.equal(mask, base["targets"]))
again = build_data(Options(**sets, augment="light"), seed=3).train
again.set_epoch(1)
assert all(torch.equal(again[i]["targets"], ds[i]["targets"]) for i in range(len(ds)))
print(agree, interior, changed, len(ds))
"""


def test_augmentation_moves_image_and_mask_alike(project: Path, tmp_path: Path) -> None:
    # at data.image_size already: the only resampling is the augmentation's
    root = write_masks(tmp_path / "clean", {"train": 24, "val": 2}, noise=False, side=SIZE)
    result = run_in_project(project, "-c", AUGMENTED, str(root))
    assert result.returncode == 0, result.stderr
    agree, interior, changed, total = map(int, result.stdout.split())
    assert interior > 0.5 * total * SIZE * SIZE
    assert agree == interior  # away from class edges, every mask pixel is the image's class
    assert changed >= total // 2  # the augmentation did change most masks


def train(project: Path, out: Path, *sets: str) -> subprocess.CompletedProcess[str]:
    return run_in_project(project, "-m", PKG, "train", "--set", f"train.out_dir={out}",
                          *[a for s in sets for a in ("--set", s)])  # fmt: skip


def last_weights(out: Path) -> dict[str, torch.Tensor]:
    return torch.load(out / "last.pt", map_location="cpu", weights_only=True)["model_state_dict"]


@pytest.mark.slow
def test_sigkill_then_resume_with_augmentation_and_workers_is_bit_identical(
    project: Path, root: Path, tmp_path: Path
) -> None:
    steps = 14  # 6 steps an epoch: the runs cross two epoch boundaries and stop mid-epoch
    sets = [f"data.root={root}", "data.num_classes=3", f"data.image_size={SIZE}"]
    sets += ["data.name=slowmasks", "data.augment=standard", "model.width=8", "train.epochs=3"]
    sets += ["train.batch_size=8", "train.device=cpu", "train.checkpoint_every=3"]
    sets += [f"train.max_steps={steps}"]
    reference = train(project, tmp_path / "reference", *sets, "data.num_workers=0")
    assert reference.returncode == 0, reference.stderr
    out = tmp_path / "run"
    args = [a for s in [*sets, f"train.out_dir={out}", "data.num_workers=2"] for a in ("--set", s)]
    env = dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", PKG, "train", *args],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    kill_tree_once(proc, out / "step-00000006.pt")
    killed_at = torch.load(out / "last.pt", weights_only=True)["step"]
    assert 6 <= killed_at < steps
    resumed = train(project, out, *sets, "data.num_workers=2", "train.resume=auto")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from {out / 'last.pt'}" in resumed.stdout
    got, want = last_weights(out), last_weights(tmp_path / "reference")
    assert got.keys() == want.keys()
    assert [name for name in want if not torch.equal(got[name], want[name])] == []
    plain = train(project, tmp_path / "plain", *sets[:4], *sets[5:], "data.num_workers=0")
    assert plain.returncode == 0, plain.stderr
    name = "stem.layers.0.weight"  # and the augmentation did change the training
    assert not torch.equal(last_weights(tmp_path / "plain")[name], got[name])


@pytest.mark.slow
def test_export_takes_other_image_sizes(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    trained = train(project, out, "train.max_steps=1", "model.width=4", "train.device=cpu")
    assert trained.returncode == 0, trained.stderr
    exported = run_in_project(
        project, "-m", PKG, "export", "--checkpoint", str(out / "last.pt"), "--format", "pt2"
    )
    assert exported.returncode == 0, exported.stderr
    sidecar = json.loads((out / "last.pt2.json").read_text())
    assert sidecar["inputs"]["inputs"]["shape"] == ["batch", 3, "height", "width"]
    assert sidecar["output"]["shape"] == ["batch", 4, "height", "width"]
