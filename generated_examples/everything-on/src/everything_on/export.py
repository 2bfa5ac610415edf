"""`python -m <package> export`: the trained model as one file that runs without this project.

`--format pt2` writes a `torch.export` program (`torch.export.load(FILE).module()`: torch
only); `--format onnx` an ONNX model from the dynamo-based `torch.onnx.export` (the `onnx`
extra; run it with onnxruntime). Both take any batch size. Beside the model,
FILE.json says what a consumer needs: the inputs (names, dtypes, shapes),
the class names,
the preprocessing of raw inputs (from the dataset's `raw_inputs`), and the torch and
template versions. Before anything is written, the exported model is run
against the eager one on example batches of several sizes; when they differ by more than
ATOL + RTOL * |eager output|, export refuses and writes nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import json
import logging
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .checkpoint import is_checkpoint
from .config import component
from .data._synthetic import example_batch
from .evaluate import Inference, load_inference
from .provenance import template_version

ATOL = RTOL = 1e-4  # how far the exported model may be from the eager one
CHECK_BATCH_SIZES = (4, 1, 9)  # the first is traced; all are checked
Batch = dict[str, torch.Tensor]
Runner = Callable[[Batch], torch.Tensor]


class ExportError(RuntimeError):
    """The model cannot be exported, or the export does not match it; nothing was written."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """export's own options (besides --config and --set)."""
    parser.add_argument(
        "--checkpoint", required=True, help="checkpoint file, e.g. runs/default/best.pt"
    )
    parser.add_argument(
        "--format", choices=("pt2", "onnx"), required=True, help="pt2: torch.export; onnx: ONNX"
    )
    parser.add_argument(
        "--output", help="file to write (default: the checkpoint's name, .pt2 or .onnx)"
    )
    parser.add_argument(
        "--force", action="store_true", help="replace an existing export (never a checkpoint)"
    )


def export(args: argparse.Namespace) -> Path:
    """Export, check against the eager model, then write the model and its sidecar."""
    target = (
        Path(args.output) if args.output else Path(args.checkpoint).with_suffix(f".{args.format}")
    )
    for path in (target, Path(f"{target}.json")):
        check_writable(path, args.force)
    if target.suffix != f".{args.format}":
        raise ExportError(
            f"--output {target}: a {args.format} export's name ends in .{args.format}, "
            f"e.g. --output {target}.{args.format}"
        )
    inference = exportable(args)
    batches = [example_batch(inference.spec, size) for size in CHECK_BATCH_SIZES]
    # staged beside the target (the nearest folder that exists: same file system, so the
    # final renames are atomic), and only moved into place once checked
    nearest = next(folder for folder in target.absolute().parents if folder.is_dir())
    remove_stale_staging(nearest)
    try:
        with tempfile.TemporaryDirectory(dir=nearest, prefix=f".export-{os.getpid()}-") as tmp:
            staged = Path(tmp) / target.name
            difference = export_checked(inference.model, args.format, batches, staged)
            sidecar = describe(inference, args, target, batches[0], difference)
            text = json.dumps(sidecar, indent=2) + "\n"
            Path(f"{staged}.json").write_text(text, encoding="utf-8")
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, target)
            os.replace(f"{staged}.json", f"{target}.json")
    except OSError as exc:  # named by the user's --output, not the staging file
        reason = exc.strerror or exc
        raise ExportError(f"cannot write {target}: {reason}; nothing written") from None
    return target


def remove_stale_staging(folder: Path) -> None:
    """Remove the staging folders (`.export-PID-*`) of exports killed before they ended."""
    if sys.platform == "win32":  # os.kill(pid, 0) would end the process there
        return
    for staging in folder.glob(".export-*-*"):
        pid = staging.name.split("-")[1]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(staging, ignore_errors=True)


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM): alive
        return True
    return True


def check_writable(path: Path, force: bool) -> None:
    """Refuse to replace a checkpoint (ever) or another file (without --force)."""
    if path.is_dir() or (path.is_file() and is_checkpoint(path)):
        raise ExportError(f"{path} may be a checkpoint, never replaced: choose another --output")
    if path.exists() and not force:
        raise ExportError(f"{path} exists; replace it with --force, or choose another --output")


def exportable(args: argparse.Namespace) -> Inference:
    """The checkpoint's model in float32 on the CPU, as an exported file is checked and
    shipped; a model kind that cannot be exported says why (its NOT_EXPORTABLE)."""
    overrides = [*args.overrides, "train.device=cpu", "train.amp=false"]
    inference = load_inference(args.checkpoint, args.config, overrides)
    module = sys.modules[type(inference.model).__module__]
    if hasattr(module, "NOT_EXPORTABLE"):
        raise ExportError(f"{module.__name__} cannot be exported: {module.NOT_EXPORTABLE}")
    return inference


def export_checked(model: nn.Module, fmt: str, batches: list[Batch], path: Path) -> float:
    """Export `model` to `path`; the largest difference from the eager model on `batches`."""
    with warnings.catch_warnings():  # torch's own deprecations: not the user's to act on
        warnings.simplefilter("ignore", (FutureWarning, DeprecationWarning, UserWarning))
        run = EXPORTERS[fmt](model, batches[0], path)
        return check(model, run, batches)


def dynamic_shapes(batch: Batch) -> dict[str, dict[int, torch.export.Dim]]:
    """Dimension 0 of every input is the batch."""
    size = torch.export.Dim("batch", min=1)
    return {name: {0: size} for name in batch}


def positional(model: nn.Module, batch: Batch) -> list[str]:
    """The batch's input names in the order of the model's forward."""
    return [name for name in inspect.signature(model.forward).parameters if name in batch]


def export_pt2(model: nn.Module, batch: Batch, path: Path) -> Runner:
    """torch.export with dynamic shapes, saved with torch.export.save; runs the saved file.
    The inputs are positional, in forward's order: `module()(x)`, as the torch.export docs
    call a program (a program takes either positions or names, not both)."""
    names = positional(model, batch)
    with traced(model):
        program = torch.export.export(
            model, tuple(batch[n] for n in names), dynamic_shapes=dynamic_shapes(batch)
        )
    buffer = io.BytesIO()  # saved in memory first: a full disk is then an OSError, where
    torch.export.save(program, buffer)  # torch's own file writer aborts the process
    path.write_bytes(buffer.getbuffer())
    loaded = torch.export.load(path).module()
    return lambda inputs: loaded(*(inputs[n] for n in names))


def export_onnx(model: nn.Module, batch: Batch, path: Path) -> Runner:
    """The dynamo-based torch.onnx.export; runs the saved file in ONNX Runtime."""
    try:
        import onnxruntime
        import onnxscript  # noqa: F401  (the exporter needs it)
    except ImportError:
        raise ExportError("--format onnx needs the onnx extra: pip install -e '.[onnx]'") from None
    # the exporter logs its progress and registry notes: keep only real failures
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    with traced(model), contextlib.redirect_stdout(io.StringIO()):
        program = torch.onnx.export(
            model, (), kwargs=batch, dynamic_shapes=dynamic_shapes(batch), dynamo=True
        )
    program.save(str(path))
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [node.name for node in session.get_inputs()]  # unused inputs may be left out

    def run(inputs: Batch) -> torch.Tensor:
        return torch.from_numpy(session.run(None, {n: inputs[n].numpy() for n in names})[0])

    return run


EXPORTERS: dict[str, Callable[[nn.Module, Batch, Path], Runner]] = {
    "pt2": export_pt2,
    "onnx": export_onnx,
}


@contextlib.contextmanager
def traced(model: nn.Module) -> Any:
    """Tracing errors as one line naming the model's module."""
    try:
        yield
    except ExportError:
        raise
    except Exception as exc:  # the exporters raise many types; all mean "cannot export"
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ExportError(f"{type(model).__module__} cannot be exported: {reason}") from exc


@torch.no_grad()
def check(model: nn.Module, run: Runner, batches: list[Batch]) -> float:
    """The largest difference between exported and eager outputs over `batches`; raises
    when one exceeds ATOL + RTOL * |eager|."""
    worst = 0.0
    for batch in batches:
        expected, actual = model(**batch), run(batch)
        difference = (actual - expected).abs()
        worst = max(worst, float(difference.max()))
        if bool((difference > ATOL + RTOL * expected.abs()).any()):
            raise ExportError(
                f"the exported model differs from the eager one by up to {worst:.3g} "
                f"(tolerance {ATOL} + {RTOL} x |output|) on a batch of {len(expected)}; "
                "nothing written"
            )
    return worst


def describe(
    inference: Inference, args: argparse.Namespace, target: Path, batch: Batch, difference: float
) -> dict[str, Any]:
    """The sidecar: everything a program needs to feed the exported model and read it."""
    hook = getattr(component("data", inference.config.data.name), "raw_inputs", None)
    raw = hook(inference.config.data, inference.state) if hook else None
    dims = dynamic_shapes(batch)
    inputs = {
        name: {
            "dtype": str(x.dtype).removeprefix("torch."),
            "shape": [
                dims[name][i].__name__ if i in dims[name] else n for i, n in enumerate(x.shape)
            ],
        }
        for name, x in batch.items()
    }
    order = positional(inference.model, batch)
    return {
        "file": target.name,
        "format": args.format,
        "task": inference.config.task,
        "inputs": {name: inputs[name] for name in order},  # in the order of the model's forward
        "call": CALLS[args.format],
        **outputs_of(inference),
        "preprocessing": raw.preprocessing if raw else None,  # None: trained on synthetic data
        "check": {
            "max_difference": difference,
            "atol": ATOL,
            "rtol": RTOL,
            "batch_sizes": list(CHECK_BATCH_SIZES),
        },
        "checkpoint": str(args.checkpoint),
        "config": inference.config.to_dict(),
        "torch_version": torch.__version__,
        "template_version": template_version(),
        "provenance": inference.about["provenance"],
    }


CALLS = {
    "pt2": "torch.export.load(file).module()(*[inputs[name] for name in sidecar['inputs']]): "
    "positional, in this order; module()(x) with a single input",
    "onnx": "onnxruntime.InferenceSession(file).run(None, {name: array, ...}): by name",
}


def outputs_of(inference: Inference) -> dict[str, Any]:
    """What the output means: class scores, and the class names by index."""
    task = inference.task
    return {
        "output": {
            "shape": ["batch", task.num_classes],
            "meaning": "class scores (logits); softmax for probabilities",
        },
        "classes": list(task.class_names),
    }
