"""`python -m <package> plot`: loss and metric curves from metrics.csv, drawn to a PNG; and
the confusion matrix that `evaluate` draws."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """matplotlib.pyplot, drawing to files only; the `plot` extra installs it."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display needed
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise RuntimeError("plotting needs matplotlib: pip install -e '.[plot]'") from exc
    return plt


def plot_metrics(run_dir: str | Path, output: str | Path | None = None) -> Path:
    """Draw train/val loss and the validation metric; needs the `plot` extra (matplotlib)."""
    plt = pyplot()
    path = Path(run_dir) / "metrics.csv"
    if not path.is_file():
        raise FileNotFoundError(f"no metrics.csv in {run_dir}; train first")
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    # the task's metrics: every column that is not bookkeeping (accuracy, mae, ...)
    bookkeeping = {"step", "epoch", "split", "loss", "lr", "samples_per_sec", "data_wait"}
    metric = next((c for c in rows[0] if c not in bookkeeping), "loss") if rows else "loss"
    figure, (loss_axes, metric_axes) = plt.subplots(1, 2, figsize=(10, 4))
    for split in ("train", "val"):
        points = [(int(r["step"]), float(r["loss"])) for r in rows if r["split"] == split]
        if points:
            loss_axes.plot(*zip(*points, strict=True), label=f"{split} loss", marker=".")
    val = [(int(r["step"]), float(r[metric])) for r in rows if r["split"] == "val" and r[metric]]
    if val:
        metric_axes.plot(*zip(*val, strict=True), label=f"val {metric}", marker="o", color="C2")
    for axes, title in ((loss_axes, "loss"), (metric_axes, metric)):
        axes.set(title=title, xlabel="step")
        axes.grid(alpha=0.3)
        axes.legend()
    target = Path(output) if output else Path(run_dir) / "metrics.png"
    figure.tight_layout()
    figure.savefig(target, dpi=100)
    plt.close(figure)
    return target


def plot_confusion(matrix: list[list[int]], names: list[str], stem: Path) -> Path:
    """The confusion matrix as a PNG (rows: true class, columns: predicted), counts written
    in the cells when there are few classes."""
    plt = pyplot()
    size = min(4 + 0.4 * len(names), 30)
    figure, axes = plt.subplots(figsize=(size, size))
    image = axes.imshow(matrix, cmap="Blues")
    figure.colorbar(image, ax=axes, fraction=0.046)
    if len(names) <= 30:  # beyond that, labels and counts no longer fit
        axes.set_xticks(range(len(names)), names, rotation=90)
        axes.set_yticks(range(len(names)), names)
        dark = max(max(row) for row in matrix) / 2  # white counts on the darker cells
        for i, row in enumerate(matrix):
            for j, count in enumerate(row):
                colour = "white" if count > dark else "black"
                axes.text(j, i, str(count), ha="center", va="center", color=colour, fontsize=8)
    axes.set(xlabel="predicted", ylabel="true", title="confusion matrix")
    target = stem.with_suffix(".png")
    figure.tight_layout()
    figure.savefig(target, dpi=100)
    plt.close(figure)
    return target
