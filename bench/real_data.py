"""Real-data checks of ptgen's dataset kinds and default models, one command for all:

    PYTHONPATH=src python bench/real_data.py [--out-dir DIR] [--only PART] [--json PATH]

1. text:   a `transformer` project on four categories of Debian's `fortunes` corpus
           (apt-get install fortunes) vs. the majority-class baseline.
2. tables: the `csv` kind on raw tables, in projects of both tabular tasks: the Palmer
           penguins table as shipped in the `palmerpenguins` wheel (string categories,
           `NA` cells): species (tabular-classification) and body mass
           (tabular-regression); and scikit-learn's diabetes table (regression). Each
           at the project's defaults and with more epochs (named), next to the trivial
           baseline (training mean / majority class) and scikit-learn's
           HistGradientBoosting on the same split and columns (NaN and categories
           handled natively). Errors are in the target's own units.
3. image:  scikit-learn's 8x8 digits written as PNG files into root/{train,val}/<digit>/,
           at the defaults a user gets (image size 32, default epochs): the default
           `cnn` and `resnet` vs. a hand-written CNN of the guide's shape
           (bench/handwritten_cnn.py), 3 seeds each, runs interleaved; final accuracy
           and the epochs and seconds until validation accuracy first reaches 97%.

Each project is generated with ptgen's library API and trained with `python -m PKG
train`; the table rows are scored from the saved checkpoint. Prints a table and writes
bench/real_data.json (or --json PATH). Needs `pip install scikit-learn palmerpenguins` and
fortunes (apt).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

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


def penguins_csv(path: Path) -> Path:
    """penguins.csv exactly as the palmerpenguins wheel ships it (found without importing
    the package, which would import pandas)."""
    import importlib.util

    spec = importlib.util.find_spec("palmerpenguins")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("palmerpenguins not found: pip install palmerpenguins")
    source = Path(spec.submodule_search_locations[0]) / "data" / "penguins.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(source.read_bytes())
    return path


# Run inside a generated table project: scores a checkpoint on its validation split in
# the target's own units, and fits the references on the same split and columns.
TABLE_SCORE = """
import json, sys
import numpy as np
import torch
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.metrics import f1_score
from {package}.checkpoint import load_checkpoint
from {package}.config import config_from_dict
from {package}.data import build_data
from {package}.data.{module} import load_splits, to_number
from {package}.models import build_model

checkpoint = load_checkpoint(sys.argv[1])
config = config_from_dict(checkpoint["config"])
state = checkpoint["data_state"]
bundle = build_data(config.data, config.train.seed, state)
model = build_model(config.model, bundle.spec)
model.load_state_dict(checkpoint["model_state_dict"])
model.eval()
x = torch.stack([bundle.val[i]["inputs"] for i in range(len(bundle.val))])
with torch.no_grad():
    out = model(inputs=x)
train, val, target = load_splits(config.data, state["target"], set(state["na_values"]))
na = set(state["na_values"])

def raw_matrix(table):  # numbers with NaN; categories as codes (unknown: NaN)
    columns = []
    for column in state["columns"]:
        cells = table.column(column["name"])
        if column["kind"] == "numeric":
            columns.append([np.nan if c in na else to_number(c) for c in cells])
        else:
            seen = sorted({{c for c in train.column(column["name"]) if c not in na}})
            code = {{c: i for i, c in enumerate(seen)}}
            columns.append([code.get(c, np.nan) for c in cells])
    return np.array(columns, dtype=float).T

mask = [column["kind"] == "categorical" for column in state["columns"]]
x_train, x_val = raw_matrix(train), raw_matrix(val)
result = {{"num_train": len(train.rows), "num_val": len(val.rows)}}
result["features"] = len(state["features"])
if "classes" in state:
    index = {{c: i for i, c in enumerate(state["classes"])}}
    y_train = np.array([index[c] for c in train.column(target)])
    y_val = np.array([index[c] for c in val.column(target)])
    predicted = out.argmax(dim=1).numpy()
    hgb = HistGradientBoostingClassifier(categorical_features=mask, random_state=0)
    reference = hgb.fit(x_train, y_train).predict(x_val)
    trivial = np.full_like(y_val, np.bincount(y_train).argmax())  # the majority class
    for name, guess in (("ptgen", predicted), ("hgb", reference), ("baseline", trivial)):
        result[name] = {{
            "accuracy": float((guess == y_val).mean()),
            "macro_f1": float(f1_score(y_val, guess, average="macro")),
        }}
else:
    y_train = np.array([to_number(c) for c in train.column(target)])
    y_val = np.array([to_number(c) for c in val.column(target)])
    predicted = out[:, 0].double().numpy() * state["target_std"] + state["target_mean"]
    hgb = HistGradientBoostingRegressor(categorical_features=mask, random_state=0)
    reference = hgb.fit(x_train, y_train).predict(x_val)
    trivial = np.full_like(y_val, y_train.mean())  # the training mean
    for name, guess in (("ptgen", predicted), ("hgb", reference), ("baseline", trivial)):
        error = guess - y_val
        result[name] = {{
            "mae": float(np.abs(error).mean()),
            "rmse": float(np.sqrt((error ** 2).mean())),
            "r2": float(1 - (error ** 2).sum() / ((y_val - y_val.mean()) ** 2).sum()),
        }}
print(json.dumps(result))
"""

TABLES = {  # name -> (file maker, task, target, description)
    "penguins-species": (
        penguins_csv,
        "tabular-classification",
        "species",
        "Palmer penguins: species",
    ),
    "penguins-mass": (
        penguins_csv,
        "tabular-regression",
        "body_mass_g",
        "Palmer penguins: body mass (g)",
    ),
    "diabetes": (
        diabetes_csv,
        "tabular-regression",
        "target",
        "scikit-learn diabetes: progression",
    ),
}
MORE_EPOCHS = 100  # the named change next to the defaults: small tables need more steps


def table_benchmark(workdir: Path) -> list[dict]:
    rows = []
    for name, (make, task, target, description) in TABLES.items():
        table = make(workdir / f"{name}.csv")
        package = name.replace("-", "_")
        project = generate(workdir, package, task, "csv", "table")
        settings = [f"data.root={table}", "data.name=table", f"data.target={target}"]
        for changed in ([], [f"train.epochs={MORE_EPOCHS}"]):
            out = project / "runs" / ("defaults" if not changed else "more-epochs")
            start = time.perf_counter()
            sets = [*settings, *changed, f"train.out_dir={out}"]
            run(project, "-m", package, "train", *[a for s in sets for a in ("--set", s)])
            seconds = time.perf_counter() - start
            snippet = TABLE_SCORE.format(package=package, module="table")
            scores = json.loads(
                run(project, "-c", snippet, str(out / "last.pt")).strip().splitlines()[-1]
            )
            rows.append(
                {"name": name, "dataset": description, "task": task, "changed": changed,
                 "train_seconds": seconds, **scores}  # fmt: skip
            )
            print(f"  {name} {changed or 'defaults'}: {json.dumps(scores)}", flush=True)
    return rows


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


EPOCH_LINE = re.compile(r"epoch (\d+)(?:/\d+ step \d+:.*)? accuracy ([0-9.]+)")


def timed_epochs(command: list[str], cwd: Path, env: dict[str, str]) -> list[tuple[float, float]]:
    """Run a training command; (seconds since launch, val accuracy) at each epoch's end,
    read from its output lines as they appear."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    epochs = []
    assert proc.stdout is not None
    for line in proc.stdout:
        match = EPOCH_LINE.search(line)
        if match:
            epochs.append((time.perf_counter() - start, float(match.group(2))))
    if proc.wait() != 0:
        raise RuntimeError(f"{' '.join(command)} failed")
    return epochs


def first_reaching(epochs: list[tuple[float, float]], target: float) -> dict:
    for number, (seconds, accuracy) in enumerate(epochs, start=1):
        if accuracy >= target:
            return {"epoch": number, "seconds": seconds}
    return {"epoch": None, "seconds": None}


def contender_command(name: str, seed: int, root: Path, project: Path) -> list[str]:
    """The command line of one training run: the hand-written script or the project."""
    if name == "handwritten":
        return [sys.executable, str(HERE / "handwritten_cnn.py"), str(root), "--seed", str(seed)]
    model, _, changed = name.partition(" ")  # "cnn model.pool_size=1": a named change
    sets = [
        f"data.root={root}",
        "data.name=digits",
        f"model.name={model}",
        *changed.split(),
        f"train.seed={seed}",
        f"train.out_dir={project / 'runs' / name.replace(' ', '-')}-{seed}",
    ]
    return [sys.executable, "-m", "digits", "train", *[a for s in sets for a in ("--set", s)]]


def image_benchmark(workdir: Path, seeds=(1, 2, 3), target: float = 0.97) -> dict:
    """The default cnn and resnet at default settings vs the hand-written guide-shaped
    CNN, interleaved seed by seed so that load changes hit every contender alike."""
    root = digits_folder(workdir / "digit-images")
    project = generate(workdir, "digits", "image-classification", "image-folder", "digits")
    add_component(project, "model", "resnet", "resnet")
    env = dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS=THREADS)
    # The defaults, the hand-written reference, and the previous default (global pooling).
    names = ["cnn", "resnet", "handwritten", "cnn model.pool_size=1", "resnet model.pool_size=1"]
    runs: dict[str, list[dict]] = {name: [] for name in names}
    for seed in seeds:
        for name, done in runs.items():
            epochs = timed_epochs(contender_command(name, seed, root, project), project, env)
            reached = first_reaching(epochs, target)
            final, seconds = epochs[-1][1], epochs[-1][0]
            done.append(
                {"seed": seed, "curve": epochs, "final": final, "total_seconds": seconds,
                 "to_target": reached}  # fmt: skip
            )
            print(f"  {name} seed {seed}: final {final:.4f}, {target:.0%} at {reached}", flush=True)
    return {
        "dataset": "image-folder (sklearn digits as PNG, read at the default image size 32)",
        "target_accuracy": target,
        "num_train": sum(1 for _ in (root / "train").rglob("*.png")),
        "num_val": sum(1 for _ in (root / "val").rglob("*.png")),
        "runs": runs,
    }


def scores_text(scores: dict[str, float]) -> str:
    keys = ("accuracy", "macro_f1") if "accuracy" in scores else ("mae", "rmse", "r2")
    return ", ".join(f"{key} {scores[key]:.4g}" for key in keys)


def table_lines(rows: list[dict]) -> list[str]:
    lines = [
        "| table | task | settings | ptgen | HistGradientBoosting | trivial baseline |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        cells = [row["dataset"], row["task"], ", ".join(row["changed"]) or "defaults"]
        cells += [scores_text(row[key]) for key in ("ptgen", "hgb", "baseline")]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def listed(values: list, spec: str) -> str:
    return ", ".join("never" if v is None else format(v, spec) for v in values)


def image_lines(result: dict) -> list[str]:
    lines = [
        "| model | final val accuracy (seeds 1, 2, 3) | mean | epochs to 97% | seconds to 97% "
        "| seconds, all epochs (mean) |",
        "|---|---|---|---|---|---|",
    ]
    for name, runs in result["runs"].items():
        finals = [r["final"] for r in runs]
        total = sum(r["total_seconds"] for r in runs) / len(runs)
        cells = [name, listed(finals, ".2%"), f"{sum(finals) / len(finals):.2%}"]
        cells.append(listed([r["to_target"]["epoch"] for r in runs], "d"))
        cells.append(listed([r["to_target"]["seconds"] for r in runs], ".1f"))
        lines.append("| " + " | ".join([*cells, f"{total:.1f}"]) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=Path("/tmp/ptgen-real-data"))
    parser.add_argument("--only", choices=["text", "tables", "image"], action="append")
    parser.add_argument("--json", type=Path, default=HERE / "real_data.json")
    args = parser.parse_args()
    random.seed(0)
    benchmarks = {"text": text_benchmark, "tables": table_benchmark, "image": image_benchmark}
    out = args.json
    previous = json.loads(out.read_text()) if out.exists() else {}
    results = previous if args.only and isinstance(previous, dict) else {}
    for key, bench in benchmarks.items():
        if args.only and key not in args.only:
            continue
        workdir = args.out_dir / key
        if workdir.exists():
            raise SystemExit(f"{workdir} exists; pass a fresh --out-dir")
        print(f"running {key} ...", flush=True)
        results[key] = bench(workdir)
    if "text" in results:
        row = results["text"]
        print(f"\ntext: {row['dataset']}: {row['ptgen']:.4f}", end=" ")
        print(f"vs {row['baseline']:.4f} ({row['baseline_name']})")
    if "tables" in results:
        print("\n" + "\n".join(table_lines(results["tables"])))
    if "image" in results:
        print("\n" + "\n".join(image_lines(results["image"])))
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
