"""Why the previous default `cnn` fell behind a hand-written CNN on real images: change one
factor at a time and train each variant on the same data, 3 seeds each.

    PYTHONPATH=src python bench/image_defaults_diagnosis.py --out-dir /tmp/diag \
        previous:ptgen guide:adam guide:ptgen previous:adam previous-torchinit:ptgen \
        previous-headinit:ptgen previous-pool4:ptgen previous-pool2:ptgen previous-depth3:ptgen

Data: scikit-learn's digits as PNG files (bench/real_data.py's folder), read by a
generated project's `image-folder` kind at the default 32x32 and preloaded. Variants
(`MODEL:RECIPE`):
  previous            the project's cnn with pool_size=1 (global average pooling): the
                      default before this change, with its explicit init
  previous-torchinit  the same with PyTorch's default init for every layer
  previous-headinit   PyTorch's default init for the linear head only (not std 0.01)
  previous-pool2/4    average pooling to a 2x2 / 4x4 grid, head re-made (PyTorch's init)
  previous-depth3     three blocks instead of two (a receptive field over the whole image)
  default             the project's cnn as generated now
  guide               the pytorch-patterns guide's CNN (bench/handwritten_cnn.py)
Recipes: `ptgen` is the project's optimiser and schedule (AdamW, weight decay 0.01, cosine
over the run, clipping at 1.0); `adam` is the hand-written script's (Adam, fixed lr 1e-3).
Batch 32, 10 epochs, lr 1e-3, one thread. Prints one JSON line per variant: final val
accuracy per seed, their mean and seed 1's accuracy after each epoch.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import time
from pathlib import Path

import torch
from handwritten_cnn import GuideCNN
from real_data import digits_folder, generate
from torch import nn

SEEDS = (1, 2, 3)


def preload(package: str, root: Path) -> tuple[torch.Tensor, ...]:
    """The train and val splits as the project's image-folder kind prepares them."""
    config = importlib.import_module(f"{package}.config")
    data = importlib.import_module(f"{package}.data")
    cfg = config.load_config(None, [f"data.root={root}", "data.name=digits"])
    bundle = data.build_data(cfg.data, 0)

    def stack(split: torch.utils.data.Dataset) -> tuple[torch.Tensor, torch.Tensor]:
        items = [split[i] for i in range(len(split))]
        return torch.stack([i["inputs"] for i in items]), torch.stack([i["targets"] for i in items])

    return (*stack(bundle.train), *stack(bundle.val))


def make(variant: str, cnn, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    if variant == "guide":
        return GuideCNN(32, 10)
    if variant == "default":
        return cnn.CNN(3, 10)
    depth = 3 if variant.endswith("depth3") else 2
    model = cnn.CNN(3, 10, width=32, depth=depth, dropout=0.1, pool_size=1)
    if variant.endswith("torchinit"):
        torch.manual_seed(seed)
        for module in model.modules():
            if module is not model and hasattr(module, "reset_parameters"):
                module.reset_parameters()
    if variant.endswith("headinit"):
        model.classifier[1].reset_parameters()
    for grid in (2, 4):
        if variant.endswith(f"pool{grid}"):
            model.pool = nn.AdaptiveAvgPool2d(grid)
            model.classifier[1] = nn.Linear(64 * grid * grid, 10)
    return model


def train(model: nn.Module, recipe: str, data: tuple[torch.Tensor, ...], seed: int) -> list[float]:
    x_train, y_train, x_val, y_val = data
    epochs, batch = 10, 32
    steps = len(x_train) // batch
    if recipe == "ptgen":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
        total = epochs * steps
        cosine = lambda step: 0.5 * (1 + math.cos(math.pi * min(step / total, 1)))  # noqa: E731
        schedule, clip = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine), 1.0
    else:
        optimizer, schedule, clip = torch.optim.Adam(model.parameters(), lr=1e-3), None, 0.0
    generator, curve = torch.Generator().manual_seed(seed), []
    for _ in range(epochs):
        model.train()
        order = torch.randperm(len(x_train), generator=generator)
        for i in range(steps):
            index = order[i * batch : (i + 1) * batch]
            loss = nn.functional.cross_entropy(model(x_train[index]), y_train[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if clip:
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            if schedule:
                schedule.step()
        model.eval()
        with torch.no_grad():
            curve.append(round(float((model(x_val).argmax(1) == y_val).float().mean()), 4))
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", nargs="+", help="MODEL:RECIPE, e.g. previous:ptgen")
    parser.add_argument("--out-dir", type=Path, default=Path("/tmp/ptgen-image-diagnosis"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    root = digits_folder(args.out_dir / "digit-images")
    project = generate(args.out_dir, "digits", "image-classification", "image-folder", "digits")
    sys.path.insert(0, str(project / "src"))
    cnn = importlib.import_module("digits.models.cnn")
    data = preload("digits", root)
    for spec in args.variants:
        variant, recipe = spec.split(":")
        start = time.perf_counter()
        curves = [train(make(variant, cnn, seed), recipe, data, seed) for seed in SEEDS]
        finals = [curve[-1] for curve in curves]
        print(json.dumps({
            "variant": variant, "recipe": recipe, "final": finals,
            "mean": round(sum(finals) / len(finals), 4), "curve_seed1": curves[0],
            "seconds_per_run": round((time.perf_counter() - start) / len(SEEDS), 1),
        }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
