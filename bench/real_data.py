"""Real-data checks of ptgen's dataset kinds, one command for all three:

    PYTHONPATH=src python bench/real_data.py [--out-dir /tmp/ptgen-real-data] [--json PATH]

1. text:         a `transformer` project on four categories of Debian's `fortunes`
                 corpus (apt-get install fortunes) vs. the majority-class baseline.
2. csv:          an `mlp` project on scikit-learn's bundled diabetes table vs. predicting
                 the training mean (MAE in the target's own units).
3. image-folder: the default `cnn` on scikit-learn's bundled 8x8 digits, written as PNG
                 files into root/{train,val}/<digit>/, vs. a hand-written minimal PyTorch
                 script of the same CNN on the same files and epochs.

Each project is generated with ptgen's library API, trained with `python -m PKG train`
and scored with `python -m PKG evaluate --checkpoint .../last.pt --json`. Prints a table and
writes bench/real_data.json (or --json PATH). Needs scikit-learn (pip) and fortunes (apt).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch import nn

from ptgen.components import add_component
from ptgen.project import ProjectOptions, new_project

HERE = Path(__file__).resolve().parent
FORTUNES = Path("/usr/share/games/fortunes")
CATEGORIES = ("computers", "definitions", "politics", "songs-poems")
THREADS = os.environ.get("OMP_NUM_THREADS", "1")  # contended CPUs: one thread is faster


def fortunes_tsv(path: Path, categories: tuple[str, ...] = CATEGORIES) -> Path:
    """text<TAB>label rows, one per fortune (entries are separated by lines holding '%')."""
    if not FORTUNES.is_dir():
        raise SystemExit("fortunes not found: apt-get install -y fortunes")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="\t")
        writer.writerow(["text", "label"])
        for category in categories:
            raw = (FORTUNES / category).read_text(encoding="utf-8", errors="replace")
            for entry in raw.split("\n%\n"):
                text = " ".join(entry.split())
                if text:
                    writer.writerow([text, category])
    return path


def generate(workdir: Path, name: str, task: str, dataset_kind: str, module: str) -> Path:
    project = new_project(ProjectOptions(name=name, task=task), workdir, run_smoke=False).path
    add_component(project, "dataset", module, dataset_kind)
    return project


def run(project: Path, *args: str, capture: bool = True) -> str:
    env = dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS=THREADS)
    result = subprocess.run(
        [sys.executable, *args], cwd=project, env=env, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
    return result.stdout


def train_and_evaluate(
    project: Path, package: str, settings: list[str], run_name: str = "bench"
) -> tuple[dict, float]:
    overrides = [item for s in settings for item in ("--set", s)]
    out = project / "runs" / run_name
    start = time.perf_counter()
    run(project, "-m", package, "train", *overrides, "--set", f"train.out_dir={out}")
    seconds = time.perf_counter() - start
    report = run(
        project,
        "-m",
        package,
        "evaluate",
        "--checkpoint",
        str(out / "last.pt"),
        *overrides,
        "--json",
    )
    return json.loads(report.strip().splitlines()[-1]), seconds


# A snippet run inside a generated project: the validation split as the project sees it.
BASELINE = """
import json, sys
import torch
from {package}.config import load_config
from {package}.data import build_data
config = load_config(None, sys.argv[1:])
bundle = build_data(config.data, config.train.seed)
y_train = torch.stack([bundle.train[i]["targets"] for i in range(len(bundle.train))])
y_val = torch.stack([bundle.val[i]["targets"] for i in range(len(bundle.val))])
if config.task == "tabular-regression":  # targets are standardised: the train mean is 0 here
    std = bundle.state["target_std"]
    out = {{"mae": float((y_val - y_train.mean()).abs().mean()) * std, "target_std": std}}
else:
    majority = int(torch.bincount(y_train).argmax())
    accuracy = float((y_val == majority).float().mean())
    out = {{"accuracy": accuracy, "classes": bundle.state["labels"]}}
out.update(num_train=len(bundle.train), num_val=len(bundle.val))
print(json.dumps(out))
"""


def baseline(project: Path, package: str, settings: list[str]) -> dict:
    return json.loads(run(project, "-c", BASELINE.format(package=package), *settings))


def text_benchmark(workdir: Path) -> dict:
    tsv = fortunes_tsv(workdir / "fortunes.tsv")
    project = generate(workdir, "fortunes", "sequence-classification", "text", "fortunes")
    settings = [
        f"data.root={tsv}",
        "data.name=fortunes",
        "data.vocab_size=8000",
        "data.max_length=128",
        "data.bucket_by_length=true",
        "model.width=64",
        "train.epochs=5",
        "train.lr=0.002",
    ]
    result, seconds = train_and_evaluate(project, "fortunes", settings)
    base = baseline(project, "fortunes", settings)
    return {
        "dataset": "text (fortunes: " + ", ".join(CATEGORIES) + ")",
        "model": "transformer",
        "metric": "val accuracy",
        "ptgen": result["accuracy"],
        "baseline": base["accuracy"],
        "baseline_name": "majority class",
        "train_seconds": seconds,
        "num_train": base["num_train"],
        "num_val": base["num_val"],
        "settings": settings,
    }


def diabetes_csv(path: Path) -> Path:
    from sklearn.datasets import load_diabetes

    data = load_diabetes(scaled=False)  # raw units: the csv kind must standardise them
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([*data.feature_names, "target"])
        writer.writerows([*row, y] for row, y in zip(data.data.tolist(), data.target, strict=True))
    return path


def csv_benchmark(workdir: Path) -> dict:
    table = diabetes_csv(workdir / "diabetes.csv")
    project = generate(workdir, "diabetes", "tabular-regression", "csv", "diabetes")
    settings = [
        f"data.root={table}",
        "data.name=diabetes",
        "train.epochs=60",
        "train.batch_size=16",
    ]
    result, seconds = train_and_evaluate(project, "diabetes", settings)
    base = baseline(project, "diabetes", settings)
    return {
        "dataset": "csv (sklearn diabetes, 442 rows, 10 features)",
        "model": "mlp",
        "metric": "val MAE (target units)",
        "ptgen": result["mae"] * base["target_std"],  # the project reports standardised MAE
        "baseline": base["mae"],
        "baseline_name": "training mean",
        "train_seconds": seconds,
        "num_train": base["num_train"],
        "num_val": base["num_val"],
        "settings": settings,
    }


def digits_folder(root: Path, val_every: int = 5) -> Path:
    """sklearn's 1797 8x8 digits as grayscale PNGs; every 5th image of a digit is val."""
    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    seen: dict[int, int] = {}
    for image, label in zip(digits.images, digits.target, strict=True):
        n = seen[label] = seen.get(label, -1) + 1
        split = "val" if n % val_every == 0 else "train"
        folder = root / split / str(label)
        folder.mkdir(parents=True, exist_ok=True)
        pixels = (image * 255 / 16).round().astype("uint8")  # values 0..16 -> 0..255
        Image.fromarray(pixels, mode="L").save(folder / f"{n:04d}.png")
    return root


class HandWrittenCNN(nn.Module):
    """The same size as ptgen's default cnn (width 32, depth 2), written out by hand."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()

        def block(c_in: int, c_out: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(c_in, c_out, 3, padding=1),
                nn.BatchNorm2d(c_out),
                nn.ReLU(),
                nn.Conv2d(c_out, c_out, 3, padding=1),
                nn.BatchNorm2d(c_out),
                nn.ReLU(),
                nn.MaxPool2d(2),
            )

        self.net = nn.Sequential(
            block(3, 32),
            block(32, 64),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Dropout(0.1),
            nn.Linear(64, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def load_split(root: Path, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    from PIL import Image

    images, labels = [], []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in sorted(folder.glob("*.png")):
            rgb = Image.open(path).convert("RGB").resize((size, size), Image.Resampling.BILINEAR)
            pixels = torch.frombuffer(bytearray(rgb.tobytes()), dtype=torch.uint8)
            images.append(pixels.view(size, size, 3).permute(2, 0, 1).float() / 255)
            labels.append(int(folder.name))
    return torch.stack(images), torch.tensor(labels)


def handwritten(root: Path, epochs: int, size: int, batch_size: int = 32, seed: int = 42) -> float:
    """A minimal plain-PyTorch training script: Adam, fixed lr, no scheduler, no AMP."""
    torch.manual_seed(seed)
    torch.set_num_threads(int(THREADS))
    x_train, y_train = load_split(root / "train", size)
    x_val, y_val = load_split(root / "val", size)
    mean, std = x_train.mean(dim=(0, 2, 3), keepdim=True), x_train.std(dim=(0, 2, 3), keepdim=True)
    x_train, x_val = (x_train - mean) / std, (x_val - mean) / std
    model = HandWrittenCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(epochs):
        model.train()
        order = torch.randperm(len(x_train))
        for i in range(0, len(order) - batch_size + 1, batch_size):
            batch = order[i : i + batch_size]
            loss = nn.functional.cross_entropy(model(x_train[batch]), y_train[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        return float((model(x_val).argmax(dim=1) == y_val).float().mean())


def image_benchmark(workdir: Path, epochs: int = 10, size: int = 16, seeds=(1, 2, 3)) -> dict:
    """Both sides over the same seeds: one seed's spread (a few of 364 images) is as large
    as the difference being measured."""
    root = digits_folder(workdir / "digit-images")
    project = generate(workdir, "digits", "image-classification", "image-folder", "digits")
    settings = [
        f"data.root={root}",
        "data.name=digits",
        f"data.image_size={size}",
        f"train.epochs={epochs}",
    ]
    ours, seconds = [], 0.0
    for seed in seeds:
        result, took = train_and_evaluate(
            project, "digits", [*settings, f"train.seed={seed}"], f"seed-{seed}"
        )
        ours.append(result["accuracy"])
        seconds += took
    start = time.perf_counter()
    reference = [handwritten(root, epochs, size, seed=seed) for seed in seeds]
    return {
        "dataset": f"image-folder (sklearn digits as PNG, resized to {size}x{size})",
        "model": "cnn (default)",
        "metric": f"val accuracy, mean of {len(seeds)} seeds",
        "ptgen": sum(ours) / len(ours),
        "baseline": sum(reference) / len(reference),
        "baseline_name": "hand-written PyTorch CNN, same size and epochs",
        "ptgen_per_seed": ours,
        "baseline_per_seed": reference,
        "train_seconds": seconds / len(seeds),
        "baseline_seconds": (time.perf_counter() - start) / len(seeds),
        "num_train": sum(1 for _ in (root / "train").rglob("*.png")),
        "num_val": sum(1 for _ in (root / "val").rglob("*.png")),
        "settings": settings,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=Path("/tmp/ptgen-real-data"))
    parser.add_argument("--only", choices=["text", "csv", "image"], action="append")
    parser.add_argument("--json", type=Path, default=HERE / "real_data.json")
    args = parser.parse_args()
    random.seed(0)
    benchmarks = {"text": text_benchmark, "csv": csv_benchmark, "image": image_benchmark}
    rows = []
    for key, bench in benchmarks.items():
        if args.only and key not in args.only:
            continue
        workdir = args.out_dir / key
        if workdir.exists():
            raise SystemExit(f"{workdir} exists; pass a fresh --out-dir")
        print(f"running {key} ...", flush=True)
        rows.append({"name": key, **bench(workdir)})
    print(f"\n{'dataset':58} {'metric':24} {'ptgen':>8} {'baseline':>8}  baseline")
    for row in rows:
        print(
            f"{row['dataset'][:58]:58} {row['metric']:24} {row['ptgen']:8.4f} "
            f"{row['baseline']:8.4f}  {row['baseline_name']}"
        )
    out = args.json
    if args.only and out.exists():  # keep the other benchmarks' latest rows
        rows += [r for r in json.loads(out.read_text()) if r["name"] not in args.only]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
