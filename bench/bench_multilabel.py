"""Multi-label tagging of real digits: the generated `cnn` at the project's defaults against a
one-vs-rest logistic regression on the raw pixels.

    PYTHONPATH=src python bench/bench_multilabel.py [--seeds 0 1 2] [--json PATH]

Data: the 1,797 handwritten 8x8 digits bundled with scikit-learn (`load_digits`,
BSD-3-Clause; UCI "Optical Recognition of Handwritten Digits"; `pip install scikit-learn`).
The digits are split 60/20/20 (seed 0) before composing, so no validation or test digit is
seen in training. Each canvas (32x32, noisy) holds 2 to 4 digits, each upsampled to 14x14
and placed in its own quadrant with a small random offset. The label sets are DERIVED, not
annotated: a canvas's labels are the digit classes it holds (10 labels; a repeated class
counts once). 1,000 training, 300 validation and 300 test canvases, as an image folder
with labels.csv.

The project (`--task multilabel-classification --dataset image-folder`) trains at its
defaults (cnn width 32, depth 2; 10 epochs, batch 32, AdamW lr 0.001, cosine; thresholds
tuned per label on the validation split; best.pt by validation micro-F1), once per seed
(`train.seed`: initialisation and shuffling; the data are the same). `predict` scores the
test canvases with best.pt and its saved thresholds. The reference, scikit-learn's
OneVsRestClassifier(LogisticRegression) on the standardised 1,024 pixels, gets the same
per-label threshold tuning on the validation split (the F1-maximising threshold on a grid
of 0.01 steps). Both are scored by the same scikit-learn functions on the test split:
micro-F1, macro-F1 and mAP (average precision per label, averaged over the 10 labels).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import average_precision_score, f1_score
from sklearn.multiclass import OneVsRestClassifier
from sklearn.preprocessing import StandardScaler

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
SIDE, DIGIT, LABELS = 32, 14, 10


def compose(images: np.ndarray, labels: np.ndarray, count: int, seed: int):
    """`count` canvases (N, SIDE, SIDE) in [0, 1] and their multi-hot label sets (N, 10)."""
    rng = np.random.default_rng(seed)
    big = F.interpolate(torch.tensor(images)[:, None].float(), size=(DIGIT, DIGIT),
                        mode="bilinear", align_corners=False)[:, 0].numpy()  # fmt: skip
    canvases, targets = [], []
    half = SIDE // 2
    for _ in range(count):
        canvas = rng.normal(0.1, 0.08, (SIDE, SIDE))
        target = np.zeros(LABELS, np.float32)
        for quadrant in rng.permutation(4)[: rng.integers(2, 5)]:
            i = rng.integers(len(big))
            y = (quadrant // 2) * half + rng.integers(0, half - DIGIT + 1)
            x = (quadrant % 2) * half + rng.integers(0, half - DIGIT + 1)
            canvas[y : y + DIGIT, x : x + DIGIT] += big[i]
            target[labels[i]] = 1.0
        canvases.append(np.clip(canvas, 0, 1))
        targets.append(target)
    return np.stack(canvases), np.stack(targets)


def write(root: Path, split: str, canvases: np.ndarray, targets: np.ndarray) -> list[list[str]]:
    """root/<split>/<i>.png; returns the labels.csv rows."""
    (root / split).mkdir(parents=True)
    rows = []
    for i, (canvas, target) in enumerate(zip(canvases, targets, strict=True)):
        grey = (canvas * 255).round().astype(np.uint8)
        Image.fromarray(grey, mode="L").save(root / split / f"{i:05d}.png")
        rows.append([f"{split}/{i:05d}.png", "|".join(str(d) for d in np.flatnonzero(target))])
    return rows


def scores(truth: np.ndarray, probabilities: np.ndarray, chosen: np.ndarray) -> dict[str, float]:
    return {
        "micro_f1": float(f1_score(truth, chosen, average="micro", zero_division=0)),
        "macro_f1": float(f1_score(truth, chosen, average="macro", zero_division=0)),
        "map": float(average_precision_score(truth, probabilities, average="macro")),
    }


def tuned_thresholds(truth: np.ndarray, probabilities: np.ndarray) -> np.ndarray:
    """Per label, the threshold on a 0.01 grid that maximises its F1 (validation split)."""
    grid = np.arange(0.01, 1.0, 0.01)
    best = []
    for label in range(truth.shape[1]):
        f1 = [f1_score(truth[:, label], probabilities[:, label] >= t, zero_division=0)
              for t in grid]  # fmt: skip
        best.append(grid[int(np.argmax(f1))])
    return np.array(best)


def reference(train: tuple, val: tuple, test: tuple) -> dict[str, float]:
    """One-vs-rest logistic regression on the standardised pixels, thresholds tuned on val."""
    scaler = StandardScaler().fit(train[0].reshape(len(train[0]), -1))

    def flat(x: np.ndarray) -> np.ndarray:
        return scaler.transform(x.reshape(len(x), -1))

    model = OneVsRestClassifier(LogisticRegression(max_iter=2000))
    model.fit(flat(train[0]), train[1])
    thresholds = tuned_thresholds(val[1], model.predict_proba(flat(val[0])))
    probabilities = model.predict_proba(flat(test[0]))
    return scores(test[1], probabilities, probabilities >= thresholds)


def train_project(project: Path, root: Path, out: Path, seed: int) -> tuple[dict, dict, float]:
    """Train at the defaults; evaluate's JSON on test and predict's scores on test."""
    env = dict(os.environ, PYTHONPATH=str(project / "src"))
    sets = [f"data.root={root}", f"train.out_dir={out}", "train.device=cpu", f"train.seed={seed}"]
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mlbench", "train",
                    *[a for s in sets for a in ("--set", s)]],
                   cwd=project, env=env, check=True, capture_output=True)  # fmt: skip
    seconds = time.perf_counter() - start
    checkpoint = str(out / "best.pt")
    evaluated = subprocess.run(
        [sys.executable, "-m", "mlbench", "evaluate", "--checkpoint", checkpoint, "--split",
         "test", "--json"], cwd=project, env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    predicted = subprocess.run(
        [sys.executable, "-m", "mlbench", "predict", "--checkpoint", checkpoint,
         str(root / "test")], cwd=project, env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    records = {Path(r["input"]).name: r for r in map(json.loads, predicted.stdout.splitlines())}
    names = [str(d) for d in range(LABELS)]
    files = sorted(records)
    probabilities = np.array([[records[f]["probabilities"][n] for n in names] for f in files])
    chosen = np.array([[n in records[f]["labels"] for n in names] for f in files])
    return json.loads(evaluated.stdout.strip().splitlines()[-1]), (probabilities, chosen), seconds


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--json", default=str(ROOT / "bench" / "bench_multilabel.json"))
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-ml-"))
    digits = load_digits()
    images, labels = digits.images / 16.0, digits.target
    order = np.random.default_rng(0).permutation(len(images))
    a, b = int(0.6 * len(images)), int(0.8 * len(images))
    parts = {"train": (order[:a], 1000), "val": (order[a:b], 300), "test": (order[b:], 300)}
    splits = {name: compose(images[idx], labels[idx], n, seed=i + 1)
              for i, (name, (idx, n)) in enumerate(parts.items())}  # fmt: skip
    root = scratch / "digits"
    rows = [row for name, split in splits.items() for row in write(root, name, *split)]
    with open(root / "labels.csv", "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([["file", "labels"], *rows])

    from ptgen.project import ProjectOptions, new_project

    project = new_project(
        ProjectOptions(name="mlbench", task="multilabel-classification", dataset="image-folder"),
        scratch, run_smoke=False, init_git=False,
    ).path  # fmt: skip
    truth = splits["test"][1]
    runs = []
    for seed in args.seeds:
        evaluated, (probabilities, chosen), seconds = train_project(
            project, root, scratch / f"run-{seed}", seed
        )
        run = {"seed": seed, "seconds": seconds, **scores(truth, probabilities, chosen)}
        run["evaluate"] = {k: evaluated[k] for k in ("micro_f1", "macro_f1", "map")}
        runs.append(run)
        print(f"seed {seed}: {json.dumps(run)}", flush=True)
    start = time.perf_counter()
    ref = {**reference(splits["train"], splits["val"], splits["test"])}
    ref["seconds"] = time.perf_counter() - start

    def summary(key: str) -> tuple[float, float]:
        values = np.array([run[key] for run in runs])
        return float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else 0.0

    result = {
        "data": "sklearn digits 8x8 -> 14x14, 2-4 per 32x32 canvas (own quadrants); derived "
        "label sets (the classes present), 10 labels",
        "train_images": 1000, "val_images": 300, "test_images": 300,
        "labels_per_image_test": float(truth.sum(1).mean()),
        "threads": torch.get_num_threads(),
        "cnn": {key: summary(key) for key in ("micro_f1", "macro_f1", "map", "seconds")},
        "cnn_runs": runs,
        "reference": ref,
    }  # fmt: skip
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'model (test split)':<40} {'micro-F1':>15} {'macro-F1':>15} {'mAP':>15} {'s':>6}")
    print(f"{'one-vs-rest logistic regression':<40} {ref['micro_f1']:15.4f} "
          f"{ref['macro_f1']:15.4f} {ref['map']:15.4f} {ref['seconds']:6.1f}")  # fmt: skip
    cells = [f"{m:.4f} +/- {s:.4f}" for m, s in (result["cnn"][k] for k in ("micro_f1",
             "macro_f1", "map"))]  # fmt: skip
    print(f"{f'cnn (project defaults, {len(runs)} seeds)':<40} {cells[0]:>15} {cells[1]:>15} "
          f"{cells[2]:>15} {result['cnn']['seconds'][0]:6.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
