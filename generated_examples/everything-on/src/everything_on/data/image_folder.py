"""image_folder: images in class folders (ptgen dataset kind "image-folder").

Layout of `data.root`:
    root/train/<class>/*.png|jpg|jpeg|bmp|gif|webp|tif|tiff
    root/val/<class>/...        optional; without it `data.val_fraction` of each
                                training class is held out (the same files every run)
    root/test/<class>/...       optional; read only by `evaluate --split test`
Hidden files and folders (.DS_Store, ._photo.jpg, .ipynb_checkpoints/) are ignored; a
class folder without images, or a validation class that training lacks, is an error.

Before training, one pass checks every file cheaply (its header, and that it ends the
way its format ends; a full decode only when in doubt) and lists all the unreadable,
truncated, non-image and oversized files in one error; `data.skip_bad_files=true` leaves
them out instead and prints how many.

Images are decoded by data/_images.py (this file holds the folder's layout): upright by
their EXIF orientation, RGB (see _inputs.to_rgb), resized to data.image_size x
data.image_size, augmented (training split only: `data.augment`, see _augment.py) and
normalised per channel with the mean/std of the training split. Class names and those
statistics go into `bundle.state` (saved in checkpoints), so evaluation prepares images
exactly as training did, and so does `predict`, from the checkpoint alone (`raw_inputs`).

`data.processor` (a hub id or local directory: the one of `model.pretrained`, for the
`hf-vision` model kind) hands those decisions to that model's Hugging Face image processor
(`AutoImageProcessor`, read once when training starts): the image size (its crop size when
it crops, else its size; images are resized to that square), the resampling filter, and
the mean/std it normalises with, instead of data.image_size and the training split's
statistics. They are saved in `bundle.state` too (`processor`, `image_size`, `resample`,
`mean`, `std`), so evaluation and `predict` need neither the processor nor transformers.
With an empty `data.root` the project's synthetic images are used instead. This file is
yours: `ptgen update` never touches it.

`data.cache` keeps the decoded, resized images (uint8) so that only the first epoch
decodes: "disk" (the default) writes them to one file in `data.cache_dir`, reused by later
runs until a file of the folder changes (`files_key`); "memory" holds them for this run
only; "none" decodes every epoch. Augmentation still applies to every image read from it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..config import ConfigError, option
from ..tasks import DataSpec
from . import DataBundle, hold_out, note
from ._images import (
    BILINEAR,
    IMAGE_EXTENSIONS,
    ImageCache,
    Images,
    files_key,
    image_inputs,
    problem,
)
from ._inputs import RawInputs
from ._synthetic import SyntheticOptions, make_splits

MAX_LISTED = 50  # bad files named in the error; the count covers them all


@dataclass
class Options(SyntheticOptions):
    """[data] options of this dataset: set them with --set data.KEY=VALUE.

    The synthetic options are used while `root` is empty."""

    # decoding and resizing images is the slow part of a step: in parallel by default
    num_workers: int | str = option(
        "auto",
        "DataLoader worker processes (0: the main process; auto: per usable core)",
        low=0,
        auto=True,
    )
    root: str = option("", "folder with train/<class>/ (and val/<class>/); empty: synthetic images")
    val_fraction: float = option(
        0.2, "share of each class held out for validation when root has no val/", low=0.0, high=1.0
    )
    max_image_pixels: int = option(
        89_478_485, "larger images are refused (Pillow's decompression-bomb guard)", low=1
    )
    skip_bad_files: bool = option(
        False, "leave out unreadable or truncated images (else: an error listing them)"
    )
    augment: str = option(
        "none",
        "training-split augmentation (see data/_augment.py)",
        choices=("none", "light", "standard"),
    )
    augment_flip: bool = option(
        True, "augmentation mirrors images left-right (off for digits, text, ...)"
    )
    cache: str = option(
        "disk",
        "keep decoded images: disk (reused while the folder is unchanged), memory (this run only)",
        choices=("none", "memory", "disk"),
    )
    cache_dir: str = option(
        "runs/cache", "folder of data.cache=disk files (relative to the working directory)"
    )
    processor: str = option(
        "", "Hugging Face image processor (model.pretrained's) deciding size, filter, mean and std"
    )


def visible(path: Path, base: Path) -> bool:
    """Not hidden: no part of the path below `base` starts with "." (.DS_Store, ._x.jpg)."""
    return not any(part.startswith(".") for part in path.relative_to(base).parts)


def find_images(split_dir: Path) -> dict[str, list[Path]]:
    """{class name: sorted image files} of every class folder; an empty one is an error."""
    found = {}
    for class_dir in sorted(p for p in split_dir.iterdir() if p.is_dir() and visible(p, split_dir)):
        found[class_dir.name] = sorted(
            p
            for p in class_dir.rglob("*")
            if p.suffix.lower() in IMAGE_EXTENSIONS and visible(p, split_dir) and p.is_file()
        )
    empty = [name for name, files in found.items() if not files]
    if empty:
        raise ConfigError(
            f"class folder(s) without images in {split_dir}: {', '.join(empty)} "
            f"(images are {', '.join(sorted(IMAGE_EXTENSIONS))})"
        )
    return found


def drop_bad_files(splits: list[dict[str, list[Path]]], cfg: Options) -> None:
    """Check every file of the splits once; list the bad ones in one error, or with
    data.skip_bad_files leave them out (in place) and print how many."""
    root = Path(cfg.root).expanduser()
    files = [path for split in splits for paths in split.values() for path in paths]
    bad = {path: reason for path in files if (reason := problem(path, cfg.max_image_pixels))}
    if not bad:
        return
    if not cfg.skip_bad_files and len(bad) == 1:
        ((path, reason),) = bad.items()
        raise ConfigError(
            f"image file {path} cannot be used: {reason} (fix or remove it, or leave it "
            "out with --set data.skip_bad_files=true)"
        )
    if not cfg.skip_bad_files:
        lines = [f"\n  {path.relative_to(root)}: {reason}" for path, reason in bad.items()]
        more = f"\n  ... and {len(bad) - MAX_LISTED} more" if len(bad) > MAX_LISTED else ""
        raise ConfigError(
            f"{len(bad)} of {len(files)} image files in {root} cannot be used (fix or remove "
            "them, or leave them out with --set data.skip_bad_files=true):"
            + "".join(lines[:MAX_LISTED])
            + more
        )
    note(
        f"left out {len(bad)} of {len(files)} image files that cannot be used (data.skip_bad_files)"
    )
    for split in splits:
        for name in split:
            split[name] = [path for path in split[name] if path not in bad]
        empty = [name for name, paths in split.items() if not paths]
        if empty:
            raise ConfigError(
                f"class folder(s) without usable images in {root}: {', '.join(empty)}"
            )


def split_classes(
    by_class: dict[str, list[Path]], fraction: float
) -> tuple[dict[str, list[Path]], dict[str, list[Path]]]:
    """Split every class into train/val the same way on every run."""
    train, val = {}, {}
    for name, files in by_class.items():
        train_index, val_index = hold_out(len(files), fraction)
        train[name] = [files[i] for i in train_index.tolist()]
        val[name] = [files[i] for i in val_index.tolist()]
    return train, val


def labelled(
    by_class: dict[str, list[Path]], classes: list[str], split: str
) -> list[tuple[Path, int]]:
    unknown = sorted(set(by_class) - set(classes))
    if unknown:
        raise ConfigError(f"{split} split has classes not seen in training: {', '.join(unknown)}")
    index = {name: i for i, name in enumerate(classes)}
    return [(path, index[name]) for name, files in by_class.items() for path in files]


def load_splits(cfg: Options) -> tuple[dict[str, list[Path]], dict[str, list[Path]]]:
    """{class: files} of the train and val splits (val held out of train when absent),
    every file checked."""
    root = Path(cfg.root).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"data.root {root} does not exist or is not a folder")
    train_dir = root / "train"
    if not train_dir.is_dir():
        raise FileNotFoundError(
            f"data.root {root} has no train/ folder; expected root/train/<class>/*.png|jpg"
        )
    train_by_class = find_images(train_dir)
    if not train_by_class:
        raise FileNotFoundError(
            f"no images ({', '.join(sorted(IMAGE_EXTENSIONS))}) in {train_dir}/<class>/"
        )
    has_val = (root / "val").is_dir()
    val_by_class = find_images(root / "val") if has_val else {}
    drop_bad_files([train_by_class, val_by_class], cfg)
    if has_val:
        return train_by_class, val_by_class
    return split_classes(train_by_class, cfg.val_fraction)


def processor_steps(name: str) -> dict[str, Any]:
    """What the image processor `name` does to an image, as this dataset does it: its
    final size (the crop size when it crops), resampling filter, mean and std."""
    try:
        from transformers import AutoImageProcessor
    except ImportError:
        raise ConfigError(
            "data.processor needs transformers: pip install -e '.[hf]' in the project"
        ) from None
    if name.startswith((".", "/", "~")) and not Path(name).expanduser().is_dir():
        raise ConfigError(f"data.processor {name!r}: no such directory")
    try:
        processor = AutoImageProcessor.from_pretrained(name, use_fast=False)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"data.processor {name!r}: {str(exc).strip().splitlines()[0]}") from None
    crops = getattr(processor, "do_center_crop", False) and getattr(processor, "crop_size", None)
    size = dict(processor.crop_size if crops else getattr(processor, "size", None) or {})
    side = size.get("height", size.get("shortest_edge"))
    if not side or size.get("width", side) != side:
        raise ConfigError(f"data.processor {name!r}: no square image size in {size}")
    normalises = getattr(processor, "do_normalize", True)
    mean = getattr(processor, "image_mean", None) if normalises else None
    std = getattr(processor, "image_std", None) if normalises else None
    scale = (
        getattr(processor, "rescale_factor", 1 / 255)
        if getattr(processor, "do_rescale", True)
        else 1.0
    )
    if abs(scale - 1 / 255) > 1e-9:
        raise ConfigError(f"data.processor {name!r}: rescales by {scale}, this dataset by 1/255")
    return {
        "processor": name,
        "image_size": int(side),
        "resample": int(getattr(processor, "resample", BILINEAR)),
        "mean": torch.tensor(mean if mean is not None else [0.0, 0.0, 0.0], dtype=torch.float32),
        "std": torch.tensor(std if std is not None else [1.0, 1.0, 1.0], dtype=torch.float32),
    }


def build(cfg: Options, seed: int, state: dict[str, Any] | None = None) -> DataBundle:
    if not cfg.root:
        return DataBundle(*make_splits(cfg, seed))
    # The size, filter and statistics: a checkpoint's, else data.processor's (read once)
    steps = {k: state[k] for k in ("image_size", "resample") if k in state} if state else {}
    steps = steps or (processor_steps(cfg.processor) if cfg.processor and not state else {})
    cfg = dataclasses.replace(cfg, image_size=steps.get("image_size", cfg.image_size))
    resample = steps.get("resample", BILINEAR)
    train_by_class, val_by_class = load_splits(cfg)
    classes = list(state["classes"]) if state else sorted(train_by_class)
    train_files = labelled(train_by_class, classes, "train")
    val_files = labelled(val_by_class, classes, "val")
    if not val_files:
        raise FileNotFoundError(f"no validation images in {cfg.root}/val/<class>/")
    # One cache for both splits: the training sampler's first set_epoch fills it.
    root = Path(cfg.root).expanduser()
    files, where = [path for path, _ in train_files + val_files], str(root.resolve())
    cache = ImageCache(files, cfg, where, "trainval", files_key(files, root), resample)
    if state:
        mean, std = state["mean"], state["std"]
    elif "mean" in steps:
        mean, std = steps["mean"], steps["std"]
    else:
        mean, std = cache.channel_stats(len(train_files))
    spec = DataSpec(num_outputs=len(classes), in_channels=3, image_size=cfg.image_size)
    test_dir = root / "test"

    def load_test() -> Images:
        by_class = find_images(test_dir)
        drop_bad_files([by_class], cfg)
        files = labelled(by_class, classes, "test")
        paths = [path for path, _ in files]
        cache = ImageCache(paths, cfg, where, "test", files_key(paths, root), resample)
        cache.fill()  # only `evaluate --split test` asks: now, before its loader starts
        return Images(cache, [target for _, target in files], mean, std)

    train_targets, val_targets = [t for _, t in train_files], [t for _, t in val_files]
    return DataBundle(
        Images(cache, train_targets, mean, std, cfg.augment, cfg.augment_flip, seed),
        Images(cache, val_targets, mean, std, offset=len(train_files)),  # never augmented
        spec,
        state={"classes": classes, "mean": mean, "std": std, **steps},
        load_test=load_test if test_dir.is_dir() else None,
    )


def raw_inputs(cfg: Options, state: dict[str, Any]) -> RawInputs | None:
    """Image files, folders or globs, prepared exactly as in training; None for a model
    trained on the synthetic images (they have no file format)."""
    if not state:
        return None
    size, resample = state.get("image_size", cfg.image_size), state.get("resample", BILINEAR)
    return image_inputs(state, size, cfg.max_image_pixels, resample)
