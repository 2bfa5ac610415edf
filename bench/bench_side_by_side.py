"""Whole runs side by side: a generated project against a hand-written loop of the same shape.

Issue 35. For three projects at their defaults (batch 32, lr 1e-3, AdamW, clipping at 1.0,
the project's default model) the generated project's `python -m benchproj train` and a
hand-written script (HAND below) run one after the other, alternating, `--repeats`
times; each is a fresh process, timed from the outside (its stdout is read line by line
and every end-of-epoch validation line is timestamped):

- tabular: tabular-regression, the `csv` kind, the default MLP, a numeric CSV of
  `--rows` rows (10 features); by hand: pyarrow read, 20% held out, standardised with the
  training rows' mean and std, `X[perm[i:i + 32]]` slices;
- image: image-classification, the `image-folder` kind (data.cache = "disk", the default:
  decoded once), the default CNN at 32x32, `--images` PNGs in 10 classes; by hand: every
  image decoded with Pillow (RGB, bilinear) into one uint8 tensor, normalised per batch;
- text: sequence-classification, the `text` kind (variable length), the default
  transformer, a TSV of `--texts` texts; by hand: the same token arrays (the project's
  own `build_data`, so the tokenisation is the same), each batch padded with
  `pad_sequence`.

The hand-written scripts build the model with the project's `build_model` (the same
architecture and initialisation) and use `torch.optim.AdamW(fused=True)`, as the project
does; their validation pass uses the project's automatic evaluation batch. Neither
writes checkpoints but the generated project (last.pt and best.pt each epoch). Epoch
time: the median of the gaps between consecutive validation lines (epochs 2..E, so the
image cache's fill in epoch 1 is left out); start-up: the first line's time less one
epoch; whole: the process's wall time.

A second part times the 2M-row numeric CSV end to end: `train --set train.max_steps=1`
of a tabular-classification project (read, fit, encode, one step, one validation pass
over the 400,000 held-out rows, checkpoints) against
`python -c "import torch, pandas; pandas.read_csv(FILE)"`, alternating, with each
process's peak RSS (GNU time's %M, in MiB) and CPU time (%U + %S: on a shared machine it
moves less than the wall time).

    PYTHONPATH=src python bench/bench_side_by_side.py --json bench/bench_side_by_side.json
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import PACKAGE, generate_project, machine, print_table, write_json
from bench_tables import numeric_csv
from PIL import Image

HAND = r"""
import sys, time
import numpy as np, torch
from torch.nn.utils.rnn import pad_sequence
from benchproj.config import load_config
from benchproj.models import build_model
from benchproj.tasks import DataSpec

kind, root, eval_batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
epochs, batch = 3, 32
torch.manual_seed(42)


def tabular():
    import pyarrow.csv
    table = pyarrow.csv.read_csv(root)
    x = np.stack([table[n].to_numpy() for n in table.column_names[:-1]], 1)  # (N, F)
    y = table[table.column_names[-1]].to_numpy().astype(np.float64)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(0)).numpy()
    held = round(len(y) * 0.2)
    (xv, yv), (xt, yt) = [(x[o], y[o]) for o in (order[:held], order[held:])]
    mean, std = xt.mean(0), xt.std(0)
    ymean, ystd = yt.mean(), yt.std()
    prep = lambda a, b: (torch.from_numpy(((a - mean) / std).astype(np.float32)),
                         torch.from_numpy(((b - ymean) / ystd).astype(np.float32))[:, None])
    spec = DataSpec(num_outputs=1, num_features=x.shape[1])
    return prep(xt, yt), prep(xv, yv), spec, torch.nn.functional.mse_loss


def image():
    from pathlib import Path
    from PIL import Image
    classes = sorted(p.name for p in Path(root, "train").iterdir())
    files = [(f, c) for c, name in enumerate(classes)
             for f in sorted(Path(root, "train", name).glob("*.png"))]
    order = torch.randperm(len(files), generator=torch.Generator().manual_seed(0))
    pixels = torch.empty(len(files), 3, 32, 32, dtype=torch.uint8)
    for i, (f, _) in enumerate(files):
        with Image.open(f) as im:
            rgb = im.convert("RGB").resize((32, 32), Image.Resampling.BILINEAR)
        flat = torch.frombuffer(bytearray(rgb.tobytes()), dtype=torch.uint8)  # (32*32*3,)
        pixels[i] = flat.view(32, 32, 3).permute(2, 0, 1)
    labels = torch.tensor([c for _, c in files])
    held = round(len(files) * 0.2)
    val, train = order[:held], order[held:]
    mean = pixels[train].float().div(255).mean((0, 2, 3)).view(1, 3, 1, 1)
    std = pixels[train].float().div(255).std((0, 2, 3)).view(1, 3, 1, 1)
    spec = DataSpec(num_outputs=len(classes), image_size=32)
    data = lambda rows: (pixels[rows], labels[rows])
    return data(train), data(val), spec, torch.nn.functional.cross_entropy, (mean, std)


def text():
    from benchproj.data import build_data
    config = load_config(overrides=[f"data.root={root}"])
    bundle = build_data(config.data, 42)
    def arrays(ds):
        offsets, tokens = ds.arrays.offsets, ds.arrays.tokens
        seqs = [torch.from_numpy(tokens[offsets[r] : offsets[r + 1]].astype(np.int64))
                for r in ds.rows]
        return seqs, ds.targets
    return arrays(bundle.train), arrays(bundle.val), bundle.spec, torch.nn.functional.cross_entropy


def batches(split, rows):
    if kind == "tabular":
        return {"inputs": split[0][rows]}, split[1][rows]
    if kind == "image":
        mean, std = norm
        return {"inputs": (split[0][rows].float() / 255 - mean) / std}, split[1][rows]
    seqs = [split[0][i] for i in rows.tolist()]
    inputs = pad_sequence(seqs, batch_first=True)  # (B, T)
    lengths = torch.tensor([len(s) for s in seqs])
    mask = torch.arange(inputs.shape[1])[None, :] >= lengths[:, None]
    return {"inputs": inputs, "lengths": lengths, "padding_mask": mask}, split[1][rows]


made = {"tabular": tabular, "image": image, "text": text}[kind]()
train, val, spec, loss_fn = made[:4]
norm = made[4] if kind == "image" else None
config = load_config(overrides=[])
model = build_model(config.model, spec)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, fused=True)
n = len(train[1])
for epoch in range(epochs):
    model.train()
    perm = torch.randperm(n)
    for i in range(0, n - batch + 1, batch):
        inputs, targets = batches(train, perm[i : i + batch])
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(**inputs), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    model.eval()
    total, count = torch.zeros(()), 0
    with torch.no_grad():
        for i in range(0, len(val[1]), eval_batch):
            rows = torch.arange(i, min(i + eval_batch, len(val[1])))
            inputs, targets = batches(val, rows)
            total += loss_fn(model(**inputs), targets) * len(rows)
            count += len(rows)
    print(f"epoch {epoch + 1} num_samples {count} val loss {float(total) / count:.4f}", flush=True)
"""


def write_table_file(path: Path, rows: int) -> Path:
    """A numeric CSV of 10 features and a numeric target (bench_tables' numeric file)."""
    return numeric_csv(path, rows)


def write_images(root: Path, count: int) -> Path:
    """`count` PNGs (48x40, smooth colour plus noise) in 10 classes under root/train."""
    rng = np.random.default_rng(0)
    for i in range(count):
        label = i % 10
        folder = root / "train" / f"c{label}"
        folder.mkdir(parents=True, exist_ok=True)
        base = np.array([25 * label, 255 - 25 * label, (80 * label) % 255], np.float64)
        pixels = base + rng.normal(0, 30, (40, 48, 3))
        Image.fromarray(pixels.clip(0, 255).astype(np.uint8)).save(folder / f"{i}.png")
    return root


def write_texts(path: Path, count: int) -> Path:
    """TSV texts of 8-40 Zipf-drawn words, labelled by which half of the vocabulary leads."""
    rng = np.random.default_rng(0)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t")
        writer.writerow(["text", "label"])
        for _ in range(count):
            words = np.minimum(rng.zipf(1.2, rng.integers(8, 41)), 5000)
            label = "a" if (words < 50).mean() > 0.5 else "b"
            writer.writerow([" ".join(f"w{w}" for w in words), label])
    return path


def timed_run(args: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """Wall time of a process, the time of each validation line, its peak RSS and its CPU
    time (user + system: moves less than wall time with other load) from GNU time, the
    child of a small process (a child forked from this one would start with this
    process's peak, which ru_maxrss keeps across exec)."""
    with tempfile.NamedTemporaryFile("r") as peak:
        start = time.perf_counter()
        command = ["/usr/bin/time", "-o", peak.name, "-f", "%M %U %S", *args]
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True)
        marks = [time.perf_counter() - start for line in proc.stdout if "num_samples" in line]
        if proc.wait() != 0:
            raise RuntimeError(f"{args} failed ({proc.returncode})")
        whole = time.perf_counter() - start
        kib, user, system = peak.read().split()[-3:]
        cpu = float(user) + float(system)
        return {"whole": whole, "marks": marks, "peak_mb": int(kib) / 1024, "cpu": cpu}


def epoch_stats(run: dict[str, Any]) -> dict[str, float]:
    marks = run["marks"]
    epoch = statistics.median(b - a for a, b in zip(marks, marks[1:], strict=False))
    return {"epoch": epoch, "startup": marks[0] - epoch, "whole": run["whole"]}


def side_by_side(name: str, project: Path, data: Path, eval_batch: int, args: Any) -> dict:
    env = dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")
    env["PYTHONUNBUFFERED"] = "1"
    results: dict[str, list[dict[str, float]]] = {"generated": [], "hand-written": []}
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory() as out:
            generated = [sys.executable, "-m", PACKAGE, "train", "--set", f"data.root={data}"]
            generated += ["--set", "train.epochs=3", "--set", f"train.out_dir={out}"]
            hand = [sys.executable, "-c", HAND, name, str(data), str(eval_batch)]
            order = [("generated", generated), ("hand-written", hand)]
            for who, command in order if repeat % 2 == 0 else order[::-1]:
                results[who].append(epoch_stats(timed_run(command, project, env)))
    summary = {
        who: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for who, runs in results.items()
    }
    best = {  # the least disturbed run of each: on a shared machine, the closest to its speed
        who: {key: min(r[key] for r in runs) for key in ("epoch", "whole")}
        for who, runs in results.items()
    }
    return {"runs": results, "median": summary, "best": best}


def two_million(where: Path, repeats: int) -> dict[str, Any]:
    project = generate_project(where / "big", task="tabular-classification", dataset="csv")
    data = numeric_csv(where / "big.csv", 2_000_000)
    env = dict(os.environ, PYTHONPATH=str(project / "src"))
    runs: dict[str, list[dict[str, Any]]] = {"generated": [], "pandas": []}
    for repeat in range(repeats):
        with tempfile.TemporaryDirectory() as out:
            generated = [sys.executable, "-m", PACKAGE, "train", "--set", f"data.root={data}"]
            generated += ["--set", "train.max_steps=1", "--set", f"train.out_dir={out}"]
            pandas = [sys.executable, "-c", f"import torch, pandas; pandas.read_csv({str(data)!r})"]
            order = [("generated", generated), ("pandas", pandas)]
            for who, command in order if repeat % 2 == 0 else order[::-1]:
                run = timed_run(command, project, env)
                runs[who].append({key: run[key] for key in ("whole", "peak_mb", "cpu")})
    pairs = list(zip(runs["generated"], runs["pandas"], strict=True))
    ratios = [g["whole"] / p["whole"] for g, p in pairs]
    best = {who: min(r["whole"] for r in found) for who, found in runs.items()}
    return {
        "file_mb": data.stat().st_size / 2**20,
        "runs": runs,
        "ratio_median": statistics.median(ratios),
        "ratios": ratios,
        "ratio_best": best["generated"] / best["pandas"],
        "cpu_ratio_median": statistics.median(g["cpu"] / p["cpu"] for g, p in pairs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--texts", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=["tabular", "image", "text", "2m"])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    payload: dict[str, Any] = {"machine": machine(), "args": {**vars(args), "json": None}}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        cases = {
            "tabular": (
                dict(task="tabular-regression", dataset="csv"),
                2048,
                lambda: write_table_file(where / "table.csv", args.rows),
            ),
            "image": (
                dict(dataset="image-folder"),
                1024,
                lambda: write_images(where / "images", args.images),
            ),
            "text": (
                dict(task="sequence-classification", dataset="text"),
                2048,
                lambda: write_texts(where / "texts.tsv", args.texts),
            ),
        }  # the second value: the project's automatic evaluation batch at batch 32
        for name, (options, eval_batch, make) in cases.items():
            if name not in args.only:
                continue
            project = generate_project(where / name, **options)
            result = side_by_side(name, project, make(), eval_batch, args)
            payload[name] = result
            for stat in ("best", "median"):
                gen, hand = result[stat]["generated"], result[stat]["hand-written"]
                rows.append(
                    [
                        name,
                        stat,
                        round(hand["epoch"], 2),
                        round(gen["epoch"], 2),
                        round(hand["epoch"] / gen["epoch"], 3),
                        round(hand["whole"], 2),
                        round(gen["whole"], 2),
                        round(hand["whole"] / gen["whole"], 3),
                    ]
                )
            print_table(
                [
                    "case",
                    "of runs",
                    "hand epoch s",
                    "generated epoch s",
                    "speed vs hand",
                    "hand whole s",
                    "generated whole s",
                    "whole speed vs hand",
                ],
                rows,
            )
            write_json(args.json, payload)
        if "2m" in args.only:
            payload["2m"] = big = two_million(where, args.repeats)
            print(
                f"2M rows ({big['file_mb']:.0f} MiB): generated / pandas read = "
                f"{big['ratio_median']:.2f}x median of pairs, {big['ratio_best']:.2f}x best "
                f"of each (pairs: {[round(r, 2) for r in big['ratios']]}); CPU time "
                f"{big['cpu_ratio_median']:.2f}x"
            )
            for who, runs in big["runs"].items():
                print(
                    who,
                    [(round(r["whole"], 2), round(r["peak_mb"]), round(r["cpu"], 2)) for r in runs],
                )
    write_json(args.json, payload)


if __name__ == "__main__":
    main()
