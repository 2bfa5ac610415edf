"""`python -m <package> evaluate`: a checkpoint's loss and metrics on the val or test split.

The data is prepared with the state saved in the checkpoint, exactly as in training. Besides
accuracy (top-5 from 5 classes) and macro-F1, the result holds per class precision, recall,
F1 and support; the confusion matrix is written as CSV beside the checkpoint.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset

from . import checkpoint as ckpt
from .config import ConfigError, DataConfig
from .data import DataBundle, eval_loader
from .engine import evaluate
from .monitor import format_metrics
from .runtime import DistInfo, get_device, precision
from .tasks import get_task
from .train import trained_model


def evaluate_checkpoint(
    path: str, config_file: str | None, overrides: list[str], split: str = "val"
) -> dict[str, Any]:
    """Evaluate a checkpoint
    with the config it was trained with (plus any overrides)."""
    checkpoint, config, bundle, model = trained_model(path, config_file, overrides)
    device = get_device(config.train.device)
    ckpt.load_model_state(model, checkpoint, path, config.to_dict())
    model.to(device)
    loader = eval_loader(bundle, split_of(bundle, split, config.data), config, DistInfo(), device)
    amp = precision(device, config.train.amp, config.train.amp_dtype)
    task = get_task(config.task, config.train.monitor).for_data(bundle.spec, bundle.state)
    weights = checkpoint.get("class_weights")  # the loss as trained (train.class_weights)
    task, _ = task.for_training(config, bundle.train_targets, weights, device)
    result = evaluate(model, loader, task, amp, DistInfo(), details=True)
    return {"split": split, **result}


def split_of(bundle: DataBundle, split: str, data: DataConfig) -> Dataset:
    """The dataset of `split`; a data set without a test split is a one-line error."""
    if split == "val":
        return bundle.val
    if bundle.load_test is None:
        where = f"data.root {data.root!r}" if getattr(data, "root", "") else f"data {data.name!r}"
        raise ConfigError(
            f"{where} has no test split: put it in root/test/<class>/ (like root/train/)"
        )
    test = bundle.load_test()
    if len(test) == 0:
        raise ConfigError(f"the test split of {data.root} is empty")
    return test


def write_reports(
    result: dict[str, Any], checkpoint: str, output_dir: str | None
) -> dict[str, str]:
    """Write the confusion matrix of `result` as CSV (rows: true class, columns: predicted)
    named after the checkpoint and split, beside the checkpoint or in `output_dir`;
    returns its path by name."""
    folder = Path(output_dir) if output_dir else Path(checkpoint).parent
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{Path(checkpoint).stem}-{result['split']}-confusion"
    names, matrix = list(result["per_class"]), result["confusion_matrix"]
    with open(stem.with_suffix(".csv"), "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["true \\ predicted", *names])
        writer.writerows([name, *row] for name, row in zip(names, matrix, strict=True))
    written = {"confusion_matrix_csv": str(stem.with_suffix(".csv"))}
    return written


def format_report(result: dict[str, Any]) -> str:
    """The result for reading: the metrics on one line, a line per class, the files written."""
    numbers = {k: v for k, v in result.items() if isinstance(v, (int, float))}
    lines = [f"{result['split']}: {format_metrics(numbers)}"]
    width = max(len(name) for name in [*result["per_class"], "class"])
    lines.append(f"{'class':<{width}}  precision  recall      f1  support")
    for name, m in result["per_class"].items():
        lines.append(
            f"{name:<{width}}  {m['precision']:9.4f}  {m['recall']:6.4f}  {m['f1']:6.4f}"
            f"  {m['support']:7d}"
        )
    lines += [f"wrote {path}" for key, path in result.items() if key.endswith(("_csv", "_png"))]
    return "\n".join(lines)
