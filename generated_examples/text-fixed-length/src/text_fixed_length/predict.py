"""`python -m <package> predict`: run a trained model on new texts.

Everything comes from the checkpoint: the model's config and weights, and the data state
(class names, normalisation, vocabulary, table schema) with which the dataset component's
`raw_inputs` prepares raw inputs exactly as in training; the training data need not exist.
Inputs stream through in batches (memory stays flat however many there are), each batch's
results are written as soon as they are known, and an input that cannot be read is
reported on stderr while the others go on.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import torch
from torch.utils.data import default_collate
from tqdm import tqdm

from .checkpoint import is_checkpoint
from .config import ConfigError, component
from .data._inputs import Raw, RawInputs
from .engine import to_device
from .evaluate import Inference, load_inference
from .tasks import Task


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """predict's own options (besides --config and --set)."""
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="text files: one text per line, or the `text` column of a .csv/.tsv/.jsonl file",
    )
    parser.add_argument(
        "--checkpoint", required=True, help="checkpoint file, e.g. runs/default/best.pt"
    )
    parser.add_argument("--output", help="file to write (default: standard output)")
    parser.add_argument(
        "--force", action="store_true", help="replace existing output (never a checkpoint or data)"
    )
    parser.add_argument(
        "--format",
        choices=("jsonl", "csv"),
        default="jsonl",
        help="one JSON object or CSV row per input",
    )
    parser.add_argument("--top-k", type=int, default=5, help="classes listed per input (default 5)")
    parser.add_argument(
        "--batch-size", type=int, default=64, help="inputs per forward pass (default 64)"
    )


def predict(args: argparse.Namespace) -> int:
    """Predict every input; returns how many could not be read (their errors are on stderr)."""
    if args.batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1; got {args.batch_size}")
    if args.top_k < 1:
        raise ConfigError(f"--top-k must be at least 1; got {args.top_k}")
    inference = load_inference(args.checkpoint, args.config, args.overrides)
    if args.output:
        run = str(Path(args.checkpoint).parent)
        kept = [run, getattr(inference.config.data, "root", ""), *args.inputs]
        check_target(Path(args.output), args.force, kept)
    hook = getattr(component("data", inference.config.data.name), "raw_inputs", None)
    raw = hook(inference.config.data, inference.state) if hook else None
    if raw is None:
        raise ConfigError(
            f"data {inference.config.data.name!r} cannot read raw inputs: the model was trained "
            "on synthetic data (data.root empty), or its module has no raw_inputs"
        )
    top_k = min(args.top_k, inference.task.num_classes)
    failures = []

    def fail(item: Raw, reason: str) -> None:
        failures.append(item)
        source = printable(item.source)
        where = source if item.row is None else f"{source} row {item.row}"
        # a reason that already names the file (Pillow's, say) is not prefixed twice
        message = reason if item.source in reason else f"{where}: {reason}"
        message = printable(message)
        tqdm.write(f"error: {message}", file=sys.stderr)  # above the progress bar, if any

    with output_file(args.output) as handle, progress() as bar:
        output = Output(handle, args.format)
        for items, batch in batches(raw, args.inputs, args.batch_size, fail):
            outputs = forward(inference, batch)
            output.write(records(items, ranked(inference.task, outputs, top_k)))
            bar.update(len(items))
    return len(failures)


def check_target(output: Path, force: bool, kept: list[str]) -> None:
    """--output never replaces a checkpoint, or a file of the checkpoint's run folder, the
    training data or an input (`kept`), even with --force."""
    target = output.resolve()
    if target.is_dir() or (target.is_file() and is_checkpoint(target)):
        raise ConfigError(f"{output} may be a checkpoint, never replaced; use another --output")
    for source in filter(None, kept):
        where = Path(source).expanduser().resolve()
        if target.exists() and (target == where or where in target.parents):
            raise ConfigError(
                f"{output} is part of {source} (the checkpoint's run, the training data or "
                "an input), never replaced; use another --output"
            )
    if target.exists() and not force:
        raise ConfigError(f"{output} exists; replace it with --force, or use another --output")


def batches(
    raw: RawInputs, sources: list[str], batch_size: int, fail: Callable[[Raw, str], None]
) -> Iterator[tuple[list[Raw], dict[str, torch.Tensor]]]:
    """The readable inputs, prepared and collated in batches of `batch_size`; each one that
    cannot be read or prepared goes to `fail` with the reason."""
    collate = raw.collate_fn or default_collate
    items: list[Raw] = []
    samples: list[dict[str, torch.Tensor]] = []
    for item in raw.read(sources):
        if item.error is not None:
            fail(item, item.error)
            continue
        try:
            samples.append(raw.prepare(item.value))
        except (ValueError, OSError) as exc:
            fail(item, str(exc))
            continue
        items.append(item)
        if len(items) == batch_size:
            yield items, collate(samples)
            items, samples = [], []
    if items:
        yield items, collate(samples)


def records(items: list[Raw], results: Iterator[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per input: where it came from (the file, and the row), then its results."""
    return [{**origin(item), **result} for item, result in zip(items, results, strict=True)]


def origin(item: Raw) -> dict[str, Any]:
    """The file an input came from, and its row when the file holds many."""
    source = printable(item.source)
    return {"input": source} if item.row is None else {"input": source, "row": item.row}


def printable(name: str) -> str:
    """A file name as valid UTF-8 text: the bytes of a name that is not UTF-8 (which Python
    holds as lone surrogates) written as \\xNN escapes, so every output format can hold it."""
    try:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that no undecodable byte made
        return name.encode("utf-8", "backslashreplace").decode("utf-8")


@torch.inference_mode()
def forward(inference: Inference, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Model outputs for one batch, as float32 on the CPU."""
    batch = to_device(batch, inference.precision.device)
    with inference.precision.autocast():
        outputs = inference.model(**batch)
    return outputs.float().cpu()


def ranked(task: Task, outputs: torch.Tensor, top_k: int) -> Iterator[dict[str, Any]]:
    """Per input: the most likely class, its probability, and the `top_k` classes."""
    top = outputs.softmax(dim=1).topk(top_k, dim=1)  # (B, k) values and indices
    for probabilities, indices in zip(top.values.tolist(), top.indices.tolist(), strict=True):
        classes = [
            {"label": task.class_names[i], "probability": p}
            for p, i in zip(probabilities, indices, strict=True)
        ]
        yield {**classes[0], "top_k": classes}


class Output:
    """Records written as JSON lines, or as CSV rows under a header taken from the first."""

    def __init__(self, handle: TextIO, fmt: str) -> None:
        self.handle, self.fmt = handle, fmt
        self.rows: csv.DictWriter | None = None

    def write(self, records: list[dict[str, Any]]) -> None:
        """Write a batch's records, and flush: they are out as soon as they are known."""
        if self.fmt == "jsonl":
            self.handle.write("".join(f"{json.dumps(record)}\n" for record in records))
        elif records:
            rows = [csv_row(record) for record in records]
            if self.rows is None:
                self.rows = csv.DictWriter(self.handle, list(rows[0]))
                self.rows.writeheader()
            self.rows.writerows(rows)
        self.handle.flush()


def csv_row(record: dict[str, Any]) -> dict[str, Any]:
    """A record as flat CSV cells: the top-k become label_2, probability_2, ..."""
    row = {key: value for key, value in record.items() if key != "top_k"}
    for rank, entry in enumerate(record["top_k"][1:], start=2):
        row[f"label_{rank}"], row[f"probability_{rank}"] = entry["label"], entry["probability"]
    return row


@contextlib.contextmanager
def output_file(path: str | None) -> Iterator[TextIO]:
    """The --output file (created, or replaced with --force), or standard output."""
    if path is None:
        yield sys.stdout
        return
    with open(path, "w", newline="", encoding="utf-8") as handle:
        yield handle


def progress() -> tqdm:
    """A progress bar counting inputs, on an interactive terminal only."""
    return tqdm(unit=" inputs", disable=not sys.stderr.isatty(), leave=False, dynamic_ncols=True)
