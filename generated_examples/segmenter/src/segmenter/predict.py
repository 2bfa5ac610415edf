"""`python -m <package> predict`: run a trained model on new images.

Everything comes from the checkpoint: the model's config and weights, and the data state
(class names, normalisation, vocabulary, table schema) with which the dataset component's
`raw_inputs` prepares raw inputs exactly as in training; the training data need not exist.
Each input's mask (the argmax class id per pixel, at the model's input size, data.image_size
square) is written as a PNG to --mask-dir, by default masks/ beside the checkpoint, never the
data's own (palette mode in the data's palette colours when it has one, else grey values that
are the ids), with --overlay also the image with the mask over it; the record names the files
and each class's share of the pixels. An existing mask is replaced only with --force.
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

import numpy as np
import torch
from PIL import Image
from torch.utils.data import default_collate
from tqdm import tqdm

from .checkpoint import is_checkpoint
from .config import ConfigError, component
from .data._inputs import Raw, RawInputs, to_rgb
from .engine import to_device
from .evaluate import Inference, load_inference


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """predict's own options (besides --config and --set)."""
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="image files, folders (searched recursively) or globs such as 'photos/*.jpg'",
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
    parser.add_argument(
        "--mask-dir", help="folder of the mask PNGs (default: masks/ beside the checkpoint)"
    )
    parser.add_argument(
        "--overlay", action="store_true", help="also write STEM-overlay.png: mask on image"
    )
    parser.add_argument(
        "--batch-size", type=int, default=64, help="inputs per forward pass (default 64)"
    )


def predict(args: argparse.Namespace) -> int:
    """Predict every input; returns how many could not be read (their errors are on stderr)."""
    if args.batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1; got {args.batch_size}")
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
    folder = args.mask_dir or Path(args.checkpoint).parent / "masks"  # never the data's
    masks = MaskWriter(Path(folder), inference, args.overlay, args.force)
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
            output.write(records(items, masks.write(items, outputs)))
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


def colour_table(count: int) -> list[tuple[int, int, int]]:
    """Distinct colours for class ids 0..count-1 (PASCAL VOC's scheme: the bits of the id
    spread over r, g and b from the high bit down); id 0 is black."""
    table = []
    for index in range(count):
        r = g = b = 0
        for bit in range(8):
            r |= ((index >> (3 * bit)) & 1) << (7 - bit)
            g |= ((index >> (3 * bit + 1)) & 1) << (7 - bit)
            b |= ((index >> (3 * bit + 2)) & 1) << (7 - bit)
        table.append((r, g, b))
    return table


class MaskWriter:
    """Writes each input's predicted mask (and overlay) to a folder, named after the input."""

    def __init__(self, folder: Path, inference: Inference, overlay: bool, force: bool) -> None:
        self.folder, self.overlay, self.task, self.force = folder, overlay, inference.task, force
        saved = [tuple(c) for c in inference.state.get("palette") or []]
        self.colours = saved or colour_table(self.task.num_classes)
        self.used: set[str] = set()
        folder.mkdir(parents=True, exist_ok=True)

    def name(self, source: str) -> str:
        """The input's file stem, numbered when two inputs share it."""
        stem, n = Path(source).stem, 1
        name = stem
        while name in self.used:
            n += 1
            name = f"{stem}-{n}"
        self.used.add(name)
        return name

    def write(self, items: list[Raw], outputs: torch.Tensor) -> Iterator[dict[str, Any]]:
        """Per input: the mask file, the overlay file (--overlay), each class's pixel share."""
        predicted = outputs.argmax(dim=1)  # (B, H, W) class ids
        flat = [c for colour in self.colours for c in colour]
        for item, ids in zip(items, predicted, strict=True):
            mask = Image.fromarray(ids.numpy().astype(np.uint8), mode="P")  # ids as indices
            mask.putpalette(flat)
            path = self.folder / f"{self.name(item.source)}.png"
            overlay = path.with_name(f"{path.stem}-overlay.png")
            for target in (path, overlay) if self.overlay else (path,):
                if target.exists() and not self.force:
                    raise ConfigError(
                        f"{target} exists; replace it with --force, or use another --mask-dir"
                    )
            mask.save(path)
            record: dict[str, Any] = {"mask": str(path)}
            if self.overlay:
                with Image.open(item.source) as opened:
                    image = to_rgb(opened).resize(mask.size, Image.Resampling.BILINEAR)
                Image.blend(image, mask.convert("RGB"), 0.5).save(overlay)
                record["overlay"] = str(overlay)
            counts = torch.bincount(ids.flatten(), minlength=self.task.num_classes)  # (K,)
            shares = (counts.double() / ids.numel()).tolist()
            record["class_shares"] = dict(zip(self.task.class_names, shares, strict=True))
            yield record


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
    """A record as flat CSV cells: the class shares become share_<class>, ..."""
    row = {key: value for key, value in record.items() if key != "class_shares"}
    for name, share in record["class_shares"].items():
        row[f"share_{name}"] = share
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
