"""Raw inputs for `predict` and `export`: what a dataset kind provides, and the readers.

A dataset kind that can read raw inputs defines `raw_inputs(cfg, state) -> RawInputs`: how
image files become model inputs, from the options and the state saved in a checkpoint
alone (the training data need not exist). `predict` streams the raw inputs
through `read` and `prepare`, batches them with `collate_fn` and runs the model; `export`
writes `preprocessing` into the sidecar of an exported model, for programs that feed it
without this project.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import torch


class Raw(NamedTuple):
    """One raw input, or why it cannot be read (then `value` is None)."""

    source: str  # the file (or argument) it came from
    row: int | None  # its row in that file, counted from 1; None for a whole file
    value: Any  # what `RawInputs.prepare` takes
    error: str | None = None


@dataclass
class RawInputs:
    """How a dataset kind turns raw inputs into model inputs (see the module docstring)."""

    read: Callable[[list[str]], Iterator[Raw]]  # predict's INPUT arguments -> raw inputs, lazily
    # one raw value -> one sample (no targets), checked and converted as the dataset's
    # items are; raises ValueError or OSError with the reason when it cannot be used
    prepare: Callable[[Any], dict[str, Any]]
    preprocessing: dict[str, Any]  # the steps, as JSON, for an export's sidecar
    # samples -> the model's inputs (None: stack them); it may finish preparing a batch at
    # a time what is cheaper so (the csv kind standardises whole batches)
    collate_fn: Callable[[list[dict[str, Any]]], dict[str, torch.Tensor]] | None = None


def image_files(sources: list[str], extensions: set[str]) -> Iterator[Raw]:
    """Image paths from files, folders (searched recursively, in sorted order) and globs
    (`photos/*.jpg`, `shots/**/*.png`); a source that matches nothing is one error."""
    for source in sources:
        path = Path(source).expanduser()
        if path.is_file():
            found: Iterator[Path] = iter([path])  # named explicitly: any extension
        elif path.is_dir():
            found = (p for p in walk_sorted(path) if p.suffix.lower() in extensions)
        elif any(c in source for c in "*?["):
            matches = sorted(glob.glob(str(path), recursive=True))
            found = (Path(p) for p in matches if os.path.isfile(p))
        else:
            yield Raw(source, None, None, "no such file or folder")
            continue
        empty = True
        for file in found:
            empty = False
            yield Raw(str(file), None, file)
        if empty:
            yield Raw(source, None, None, f"no images ({', '.join(sorted(extensions))})")


def walk_sorted(folder: Path) -> Iterator[Path]:
    """Every visible file under `folder`, folder by folder in name order, without listing
    the whole tree first (a folder of 50k images streams). Hidden files and folders
    (.DS_Store, ._photo.jpg, .ipynb_checkpoints/) are skipped, as in training."""
    for parent, folders, files in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith("."))  # walk order
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(parent) / name
