"""The `hf-datasets` kind against the kind that reads the same data exported to files
(`image-folder`, `text`, `csv`), side by side in one run.

    PYTHONPATH=src python bench/bench_hf_datasets.py [--rows N] [--epochs E] [--json PATH]

Data: one `DatasetDict` per modality built with the `datasets` library and saved with
`save_to_disk` (train and validation splits), and the same rows exported as the file kind
reads them, in the same order (image files named so that image-folder's sorted listing is
the dataset's row order; ClassLabel names sorted, as the file kinds sort class names):
  image  4 classes of 32x32 PNG images (a colour per class plus noise);
  text   2 classes of short reviews (one sentiment word among neutral ones);
  table  3 classes from two numeric and one text column (csv kind: train.csv, val.csv);
  regression  a number from the same kind of columns (csv kind; the metric is mae).
Each pair trains a project of the task at the same seed and settings (train.batch_size 32,
data.num_workers 0, OMP_NUM_THREADS=1, `--epochs`); the validation metric is `evaluate`'s
accuracy (mae for regression) and loss on last.pt. Time per epoch is the epoch's batches
over the run's own median throughput (metrics.csv's samples/s of the training rows after
the first epoch), so start-up, data preparation and evaluation are left out; the pairs
alternate, each run `--repeats` times, and the minimum is kept (these machines are shared
and noisy).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILE_KINDS = {"image": "image-folder", "text": "text", "table": "csv", "regression": "csv"}
TASKS = {
    "image": "image-classification",
    "text": "sequence-classification",
    "table": "tabular-classification",
    "regression": "tabular-regression",
}
METRICS = {"regression": "mae"}  # evaluate's validation metric compared; else accuracy


def build_data(root: Path, rows: int) -> dict[str, tuple[Path, Path]]:
    """{modality: (save_to_disk folder, exported files folder)}."""
    import datasets
    import numpy as np
    from PIL import Image

    datasets.disable_progress_bars()
    rng = np.random.default_rng(0)
    out = {}

    colours = {
        "blue": (40, 60, 200),
        "green": (40, 180, 60),
        "red": (200, 40, 40),
        "yellow": (220, 210, 40),
    }
    names = sorted(colours)

    def image_split(count: int) -> dict[str, list]:
        labels = sorted(rng.integers(0, len(names), count).tolist())  # grouped by class
        cells = []
        for label in labels:
            base = np.array(colours[names[label]], dtype=np.float64)
            pixels = (base + rng.normal(0, 70, (32, 32, 3))).clip(0, 255).astype(np.uint8)
            buffer = io.BytesIO()
            Image.fromarray(pixels).save(buffer, "PNG")
            cells.append({"bytes": buffer.getvalue(), "path": None})
        return {"image": cells, "label": labels}

    features = datasets.Features(
        {"image": datasets.Image(), "label": datasets.ClassLabel(names=names)}
    )
    splits = {"train": image_split(rows), "validation": image_split(rows // 4)}
    dataset = datasets.DatasetDict(
        {k: datasets.Dataset.from_dict(v, features=features) for k, v in splits.items()}
    )
    dataset.save_to_disk(root / "image-hf")
    for split, folder in (("train", "train"), ("validation", "val")):
        for i, (cell, label) in enumerate(
            zip(splits[split]["image"], splits[split]["label"], strict=True)
        ):
            target = root / "image-files" / folder / names[label] / f"{i:06d}.png"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(cell["bytes"])
    out["image"] = (root / "image-hf", root / "image-files")

    words = {"neg": ["awful", "bad", "poor", "dull"], "pos": ["great", "lovely", "fine", "good"]}
    filler = "the a film plot actor scene was it and but very quite rather long short story".split()

    def text_split(count: int) -> dict[str, list]:
        labels = rng.integers(0, 2, count).tolist()
        texts = []
        for label in labels:
            tokens = list(rng.choice(filler, 12))
            tokens.insert(int(rng.integers(0, 12)), str(rng.choice(words[["neg", "pos"][label]])))
            texts.append(" ".join(tokens))
        return {"text": texts, "label": labels}

    features = datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"])}
    )
    splits = {"train": text_split(rows), "validation": text_split(rows // 4)}
    dataset = datasets.DatasetDict(
        {k: datasets.Dataset.from_dict(v, features=features) for k, v in splits.items()}
    )
    dataset.save_to_disk(root / "text-hf")
    (root / "text-files").mkdir()
    for split, name in (("train", "train"), ("validation", "val")):
        with (root / "text-files" / f"{name}.tsv").open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f, delimiter="\t")
            writer.writerow(["text", "label"])
            for text, label in zip(splits[split]["text"], splits[split]["label"], strict=True):
                writer.writerow([text, ["neg", "pos"][label]])
    out["text"] = (root / "text-hf", root / "text-files")

    def table_split(count: int) -> dict[str, list]:
        x, z = rng.normal(size=count), rng.normal(size=count)
        colour = rng.choice(["blue", "green", "red"], count)
        score = x + 0.5 * z + (colour == "red") * 1.0
        labels = np.digitize(score, [-0.5, 0.8]).tolist()
        return {"x": x.tolist(), "z": z.tolist(), "colour": colour.tolist(), "label": labels}

    classes = ["high", "low", "mid"]  # sorted, as the csv kind sorts class names
    order = {0: "low", 1: "mid", 2: "high"}
    features = datasets.Features(
        {
            "x": datasets.Value("float64"),
            "z": datasets.Value("float64"),
            "colour": datasets.Value("string"),
            "label": datasets.ClassLabel(names=classes),
        }
    )
    splits = {"train": table_split(rows), "validation": table_split(rows // 4)}
    for split in splits.values():
        split["label"] = [classes.index(order[y]) for y in split["label"]]
    dataset = datasets.DatasetDict(
        {k: datasets.Dataset.from_dict(v, features=features) for k, v in splits.items()}
    )
    dataset.save_to_disk(root / "table-hf")
    (root / "table-files").mkdir()
    for split, name in (("train", "train"), ("validation", "val")):
        with (root / "table-files" / f"{name}.csv").open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["x", "z", "colour", "label"])
            values = splits[split]
            for row in zip(
                values["x"], values["z"], values["colour"], values["label"], strict=True
            ):
                writer.writerow([repr(row[0]), repr(row[1]), row[2], classes[row[3]]])
    out["table"] = (root / "table-hf", root / "table-files")

    def regression_split(count: int) -> dict[str, list]:
        x, z = rng.normal(size=count), rng.normal(size=count)
        colour = rng.choice(["blue", "green", "red"], count)
        target = 3.0 * x - 2.0 * z + (colour == "red") * 4.0 + rng.normal(0, 0.5, count)
        return {
            "x": x.tolist(),
            "z": z.tolist(),
            "colour": colour.tolist(),
            "target": target.tolist(),
        }

    features = datasets.Features(
        {
            "x": datasets.Value("float64"),
            "z": datasets.Value("float64"),
            "colour": datasets.Value("string"),
            "target": datasets.Value("float64"),
        }
    )
    splits = {"train": regression_split(rows), "validation": regression_split(rows // 4)}
    dataset = datasets.DatasetDict(
        {k: datasets.Dataset.from_dict(v, features=features) for k, v in splits.items()}
    )
    dataset.save_to_disk(root / "regression-hf")
    (root / "regression-files").mkdir()
    for split, name in (("train", "train"), ("validation", "val")):
        path = root / "regression-files" / f"{name}.csv"
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["x", "z", "colour", "target"])
            values = splits[split]
            for x, z, colour, target in zip(
                values["x"], values["z"], values["colour"], values["target"], strict=True
            ):
                writer.writerow([repr(x), repr(z), colour, repr(target)])
    out["regression"] = (root / "regression-hf", root / "regression-files")
    return out


def run(project: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")
    result = subprocess.run(
        [sys.executable, *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def epoch_seconds(project: Path, settings: list[str], out: Path) -> float:
    """Seconds per training epoch, from the run's own throughput: the median samples/s of
    metrics.csv's training rows after the first epoch (no start-up, no data preparation,
    no evaluation) and the samples an epoch trains on."""
    overrides = [item for s in [*settings, f"train.out_dir={out}"] for item in ("--set", s)]
    run(project, "-m", project.name, "train", *overrides)
    with (out / "metrics.csv").open(newline="") as f:
        rows = [
            row for row in csv.DictReader(f) if row["split"] == "train" and int(row["epoch"]) > 1
        ]
    speeds = sorted(float(row["samples_per_sec"]) for row in rows)
    steps = int(run(project, "-c", STEPS.format(package=project.name), *settings).split()[-1])
    return steps * BATCH / speeds[len(speeds) // 2]


# A snippet run inside a generated project: the training loader's batches an epoch.
STEPS = """
import sys
from {package}.config import load_config
from {package}.data import build_data
config = load_config(None, sys.argv[1:])
bundle = build_data(config.data, config.train.seed)
print(len(bundle.train) // config.train.batch_size)
"""
BATCH = 32


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2000, help="training rows per modality")
    parser.add_argument(
        "--epochs", type=int, default=3, help="epochs of the timed runs, beyond the first"
    )
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path, default=HERE / "bench_hf_datasets.json")
    args = parser.parse_args()
    from ptgen.project import ProjectOptions, new_project

    results = []
    with tempfile.TemporaryDirectory(prefix="bench_hf_datasets-") as tmp:
        root = Path(tmp)
        data = build_data(root / "data", args.rows)
        for modality, (hf_root, files_root) in data.items():
            kinds = {"hf-datasets": hf_root, FILE_KINDS[modality]: files_root}
            projects = {
                kind: new_project(
                    ProjectOptions(name=f"{modality}{i}", task=TASKS[modality], dataset=kind),
                    root / "projects",
                    run_smoke=False,
                    init_git=False,
                ).path
                for i, kind in enumerate(kinds)
            }
            common = [
                "train.device=cpu",
                f"train.batch_size={BATCH}",
                "train.seed=0",
                "data.num_workers=0",
                f"train.epochs={args.epochs}",
                "train.log_every=5",
            ]
            # both image kinds decode once into memory (data/_images.py's ImageCache)
            memory = ["data.cache=memory"] if modality == "image" else []
            extra = {"image-folder": memory, "hf-datasets": memory}
            seconds: dict[str, list[float]] = {kind: [] for kind in kinds}
            for repeat in range(args.repeats):
                for kind in list(kinds) if repeat % 2 == 0 else list(reversed(kinds)):
                    settings = [*common, f"data.root={kinds[kind]}", *extra.get(kind, [])]
                    out = root / f"{modality}-{kind}-{repeat}"
                    seconds[kind].append(epoch_seconds(projects[kind], settings, out))
            metrics = {}
            for kind in kinds:
                out = root / f"{modality}-{kind}-0" / "last.pt"
                report = run(
                    projects[kind],
                    "-m",
                    projects[kind].name,
                    "evaluate",
                    "--checkpoint",
                    str(out),
                    "--json",
                )
                metrics[kind] = json.loads(report.strip().splitlines()[-1])
            hf, files = min(seconds["hf-datasets"]), min(seconds[FILE_KINDS[modality]])
            metric = METRICS.get(modality, "accuracy")
            row = {
                "modality": modality,
                "file_kind": FILE_KINDS[modality],
                "metric": metric,
                "val_metric_hf": round(metrics["hf-datasets"][metric], 6),
                "val_metric_files": round(metrics[FILE_KINDS[modality]][metric], 6),
                "val_loss_hf": round(metrics["hf-datasets"]["loss"], 6),
                "val_loss_files": round(metrics[FILE_KINDS[modality]]["loss"], 6),
                "epoch_seconds_hf": round(hf, 3),
                "epoch_seconds_files": round(files, 3),
                "time_ratio": round(hf / files, 3),
            }
            results.append(row)
            print(json.dumps(row), flush=True)
    print(
        f"\n{'modality':<11}{'file kind':<14}{'metric':<9}{'hf':>9}{'files':>9}"
        f"{'s/epoch hf':>12}{'s/epoch files':>15}{'ratio':>7}"
    )
    for r in results:
        print(
            f"{r['modality']:<11}{r['file_kind']:<14}{r['metric']:<9}"
            f"{r['val_metric_hf']:>9.4f}{r['val_metric_files']:>9.4f}"
            f"{r['epoch_seconds_hf']:>12.3f}{r['epoch_seconds_files']:>15.3f}{r['time_ratio']:>7.3f}"
        )
    args.json.write_text(
        json.dumps({"rows": args.rows, "epochs": args.epochs, "results": results}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
