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
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from ._raw import Raw
from ._raw import RawInputs as RawInputs  # re-exported: the dataset kinds import it from here


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


def to_rgb(image: Image.Image) -> Image.Image:
    """Any Pillow mode as 8-bit RGB, the same way every time: 16-bit grey scaled from its
    full range (Pillow's conversion would clip it), transparency composited on white
    (Pillow's would make it black), palette, CMYK and the rest by Pillow's conversion."""
    if image.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N"):  # 16-bit grey (PNG, TIFF)
        grey = np.asarray(image, dtype=np.float64) * (255 / 65535)  # full range -> 0..255
        image = Image.fromarray(grey.clip(0, 255).round().astype(np.uint8), mode="L")
    if image.mode == "P" and "transparency" in image.info:
        image = image.convert("RGBA")
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La"):  # transparency: composite on white
        background = Image.new("RGBA", image.size, (255, 255, 255, 255))
        image = Image.alpha_composite(background, image.convert("RGBA"))
    return image if image.mode == "RGB" else image.convert("RGB")  # no copy of a photo


def walk_sorted(folder: Path) -> Iterator[Path]:
    """Every visible file under `folder`, folder by folder in name order, without listing
    the whole tree first (a folder of 50k images streams). Hidden files and folders
    (.DS_Store, ._photo.jpg, .ipynb_checkpoints/) are skipped, as in training."""
    for parent, folders, files in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith("."))  # walk order
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(parent) / name
