"""Segmentation on real digits: the generated `unet` at the project's defaults against a
per-pixel logistic regression on each pixel's 5x5 neighbourhood.

    PYTHONPATH=src python bench/bench_segmentation.py [--wheel PATH] [--json PATH]

Data: the 1,797 handwritten 8x8 digits bundled with scikit-learn (sklearn/datasets/data/
digits.csv.gz, BSD-3-Clause; UCI "Optical Recognition of Handwritten Digits"), read from
the scikit-learn wheel (`pip download scikit-learn --no-deps`; nothing is installed).
Each digit is upsampled to 14x14 (bilinear) and one or two of them are placed at random,
without overlap, on a 32x32 noisy canvas. The masks are DERIVED, not annotated: a pixel
is its digit's class (1..10 for digits 0..9) where the upsampled intensity is above 0.35
of the maximum, else background 0; the digits are split 80/20 (seed 0) before composing,
so no validation digit is seen in training. 1,200 training and 300 validation images.

The project (`--task segmentation --dataset image-masks`) trains at its defaults
(10 epochs, batch 32, AdamW lr 0.001, cosine; unet width 16, depth 3) and `evaluate`
scores last.pt. The reference sees only local intensity, so it can find the ink but not
which digit it is: the gap is what the context of the U-Net buys.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
SIDE, DIGIT, CLASSES = 32, 14, 11


def digits(wheel: Path) -> tuple[np.ndarray, np.ndarray]:
    with zipfile.ZipFile(wheel) as z:
        raw = gzip.decompress(z.read("sklearn/datasets/data/digits.csv.gz"))
    table = np.loadtxt(io.BytesIO(raw), delimiter=",")
    return table[:, :-1].reshape(-1, 8, 8) / 16.0, table[:, -1].astype(int)


def compose(images: np.ndarray, labels: np.ndarray, count: int, seed: int):
    rng = np.random.default_rng(seed)
    big = F.interpolate(torch.tensor(images)[:, None].float(), size=(DIGIT, DIGIT),
                        mode="bilinear", align_corners=False)[:, 0].numpy()  # fmt: skip
    canvases, masks = [], []
    for _ in range(count):
        canvas = rng.normal(0.1, 0.08, (SIDE, SIDE))
        mask = np.zeros((SIDE, SIDE), np.uint8)
        taken = np.zeros((SIDE, SIDE), bool)
        for _ in range(rng.integers(1, 3)):
            for _ in range(20):  # a free place
                y, x = rng.integers(0, SIDE - DIGIT + 1, 2)
                if not taken[y : y + DIGIT, x : x + DIGIT].any():
                    break
            else:
                continue
            i = rng.integers(len(big))
            patch = big[i]
            taken[y : y + DIGIT, x : x + DIGIT] = True
            canvas[y : y + DIGIT, x : x + DIGIT] += patch
            ink = patch > 0.35 * patch.max()
            mask[y : y + DIGIT, x : x + DIGIT][ink] = labels[i] + 1
        canvases.append(np.clip(canvas, 0, 1))
        masks.append(mask)
    return np.stack(canvases), np.stack(masks)


def write(root: Path, split: str, canvases: np.ndarray, masks: np.ndarray) -> None:
    (root / split / "images").mkdir(parents=True)
    (root / split / "masks").mkdir(parents=True)
    for i, (canvas, mask) in enumerate(zip(canvases, masks, strict=True)):
        grey = (canvas * 255).round().astype(np.uint8)
        Image.fromarray(grey, mode="L").save(root / split / "images" / f"{i:05d}.png")
        Image.fromarray(mask, mode="L").save(root / split / "masks" / f"{i:05d}.png")


def confusion_metrics(confusion: torch.Tensor) -> dict[str, float]:
    c = confusion.double()
    union = c.sum(0) + c.sum(1) - c.diagonal()
    seen = union > 0
    return {
        "pixel_accuracy": float(c.trace() / c.sum()),
        "miou": float((c.diagonal() / union.clamp(min=1))[seen].mean()),
    }


def reference(train: tuple, val: tuple) -> dict[str, float]:
    """Softmax regression per pixel on its 5x5 neighbourhood of intensities (and their squares)."""
    torch.manual_seed(0)

    def features(canvases: np.ndarray) -> torch.Tensor:
        x = torch.tensor(canvases).float()[:, None]  # (N, 1, S, S)
        patches = F.unfold(x, 5, padding=2)  # (N, 25, S*S)
        patches = torch.cat([patches, patches.square()], 1)  # (N, 50, S*S)
        return patches.transpose(1, 2).reshape(-1, 50)  # (N*S*S, 50)

    x, y = features(train[0]), torch.tensor(train[1]).long().flatten()
    model = torch.nn.Linear(50, CLASSES)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(300):  # full batch
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    with torch.no_grad():
        predicted = model(features(val[0])).argmax(1)
    target = torch.tensor(val[1]).long().flatten()
    confusion = torch.bincount(target * CLASSES + predicted, minlength=CLASSES**2)
    return confusion_metrics(confusion.view(CLASSES, CLASSES))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wheel", default="", help="a scikit-learn wheel (default: pip download)")
    parser.add_argument("--json", default=str(ROOT / "bench" / "bench_segmentation.json"))
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-seg-"))
    wheel = args.wheel or ""
    if not wheel:
        subprocess.run([sys.executable, "-m", "pip", "download", "scikit-learn", "--no-deps",
                        "-q", "-d", str(scratch)], check=True)  # fmt: skip
        wheel = glob.glob(str(scratch / "scikit_learn-*.whl"))[0]
    images, labels = digits(Path(wheel))
    order = np.random.default_rng(0).permutation(len(images))
    cut = int(0.8 * len(images))
    train = compose(images[order[:cut]], labels[order[:cut]], 1200, seed=1)
    val = compose(images[order[cut:]], labels[order[cut:]], 300, seed=2)
    root = scratch / "digits"
    write(root, "train", *train)
    write(root, "val", *val)

    from ptgen.project import ProjectOptions, new_project

    project = new_project(
        ProjectOptions(name="segbench", task="segmentation", dataset="image-masks"),
        scratch, run_smoke=False, init_git=False,
    ).path  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(project / "src"))
    sets = [f"data.root={root}", f"data.num_classes={CLASSES}", f"data.image_size={SIDE}",
            f"train.out_dir={scratch / 'run'}", "train.device=cpu"]  # fmt: skip
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "segbench", "train",
                    *[a for s in sets for a in ("--set", s)]],
                   cwd=project, env=env, check=True, capture_output=True)  # fmt: skip
    unet_seconds = time.perf_counter() - start
    evaluated = subprocess.run(
        [sys.executable, "-m", "segbench", "evaluate", "--checkpoint",
         str(scratch / "run" / "last.pt"), "--json"],
        cwd=project, env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    unet = json.loads(evaluated.stdout.strip().splitlines()[-1])
    start = time.perf_counter()
    ref = reference(train, val)
    ref_seconds = time.perf_counter() - start
    background = float((val[1] == 0).mean())
    result = {
        "data": "sklearn digits 8x8 -> 14x14, 1-2 per 32x32 canvas; derived masks, 11 classes",
        "train_images": 1200, "val_images": 300, "threads": torch.get_num_threads(),
        "background_share": background,
        "unet": {"pixel_accuracy": unet["pixel_accuracy"], "miou": unet["miou"],
                 "seconds": unet_seconds},
        "reference": {**ref, "seconds": ref_seconds},
    }  # fmt: skip
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'model':<32} {'pixel acc':>9} {'mIoU':>6} {'seconds':>8}")
    print(f"{'all background':<32} {background:9.4f} {'':>6} {'':>8}")
    print(f"{'5x5 logistic regression':<32} {ref['pixel_accuracy']:9.4f} {ref['miou']:6.4f} "
          f"{ref_seconds:8.1f}")  # fmt: skip
    print(f"{'unet (project defaults)':<32} {unet['pixel_accuracy']:9.4f} {unet['miou']:6.4f} "
          f"{unet_seconds:8.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
