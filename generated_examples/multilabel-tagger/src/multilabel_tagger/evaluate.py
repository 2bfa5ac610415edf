"""`python -m <package> evaluate`: a checkpoint's loss and metrics on the val or test split.

The data is prepared with the state saved in the checkpoint, exactly as in training. Labels are
decided with the per-label thresholds saved in the checkpoint (tuned on the validation
split in training); besides micro-F1, macro-F1 and mAP, the result holds per label
precision, recall, F1, average precision, support and threshold.
"""

from __future__ import annotations

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
    task = task.with_thresholds(checkpoint.get("thresholds"))  # tuned on val in training
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
    """Multi-label evaluation writes no files: every metric is in the result."""
    return {}


def format_report(result: dict[str, Any]) -> str:
    """The result for reading: the metrics on one line, a line per label."""
    numbers = {k: v for k, v in result.items() if isinstance(v, (int, float))}
    lines = [f"{result['split']}: {format_metrics(numbers)}"]
    width = max(len(name) for name in [*result["per_class"], "label"])
    lines.append(f"{'label':<{width}}  precision  recall      f1      ap  support  threshold")
    for name, m in result["per_class"].items():
        lines.append(
            f"{name:<{width}}  {m['precision']:9.4f}  {m['recall']:6.4f}  {m['f1']:6.4f}"
            f"  {m['average_precision']:6.4f}  {m['support']:7d}  {m['threshold']:9.3f}"
        )
    return "\n".join(lines)
