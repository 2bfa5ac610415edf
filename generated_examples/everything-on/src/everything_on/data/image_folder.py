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

Images are decoded with Pillow, turned upright by their EXIF orientation, converted to
RGB the same way for every mode (transparency composited on white, 16-bit grey scaled
from its full range, palette, CMYK and the rest by Pillow's conversion), resized to
data.image_size x data.image_size, augmented (training split only: `data.augment`, see
_augment.py) and normalised per channel with the mean/std of the training split. Class
names and those statistics go into `bundle.state` (saved in checkpoints), so evaluation
prepares images exactly as training did, and so does `predict`, from the checkpoint alone
(`raw_inputs`). With an empty `data.root` the project's
synthetic images are used instead. This file is yours: `ptgen update` never touches it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image, ImageOps, UnidentifiedImageError
from torch.utils.data import Dataset

from ..config import ConfigError, option
from ..tasks import DataSpec
from . import DataBundle, hold_out, note
from ._augment import EpochSeeds, augment
from ._inputs import RawInputs, image_files
from ._synthetic import SyntheticOptions, make_splits

IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff"}
MAX_STATS_IMAGES = 2000  # mean/std are estimated on at most this many training images
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


def to_rgb(image: Image.Image) -> Image.Image:
    """Any Pillow mode as 8-bit RGB, the same way every time."""
    if image.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N"):  # 16-bit grey (PNG, TIFF)
        grey = np.asarray(image, dtype=np.float64) * (255 / 65535)  # full range -> 0..255
        image = Image.fromarray(grey.clip(0, 255).round().astype(np.uint8), mode="L")
    if image.mode == "P" and "transparency" in image.info:
        image = image.convert("RGBA")
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La"):  # transparency: composite on white
        background = Image.new("RGBA", image.size, (255, 255, 255, 255))
        image = Image.alpha_composite(background, image.convert("RGBA"))
    return image.convert("RGB")


def load_image(path: Path, size: int, max_pixels: int) -> torch.Tensor:
    """One image file as a float tensor (3, size, size) with values in [0, 1]."""
    Image.MAX_IMAGE_PIXELS = max_pixels  # per call: DataLoader workers may not share it
    try:
        with Image.open(path) as image:
            upright = ImageOps.exif_transpose(image)  # camera photos store a rotation
            rgb = to_rgb(upright).resize((size, size), Image.Resampling.BILINEAR)
    except Image.DecompressionBombError:
        raise ConfigError(
            f"image {path} has more pixels than data.max_image_pixels ({max_pixels}); "
            "raise it if you trust the file"
        ) from None
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
        raise ConfigError(f"cannot read image {path}: {exc}") from None
    pixels = torch.frombuffer(bytearray(rgb.tobytes()), dtype=torch.uint8)  # (H*W*3,)
    return pixels.view(size, size, 3).permute(2, 0, 1).float() / 255.0  # (3, H, W)


class ImageFolder(Dataset):
    """Samples {"inputs": (3, S, S) normalised float, "targets": class index}."""

    def __init__(
        self,
        files: list[tuple[Path, int]],
        size: int,
        mean: torch.Tensor,
        std: torch.Tensor,
        max_pixels: int,
        augmentation: str = "none",
        flip: bool = True,
        seed: int = 0,
    ) -> None:
        self.files, self.size, self.max_pixels = files, size, max_pixels
        self.mean, self.std = mean.view(3, 1, 1), std.view(3, 1, 1)  # (3, 1, 1)
        self.augmentation, self.flip, self.seeds = augmentation, flip, EpochSeeds(seed)

    def set_epoch(self, epoch: int) -> None:
        """Called by the training sampler: augmentation draws from (seed, epoch, index)."""
        self.seeds.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        path, label = self.files[index]
        image = load_image(path, self.size, self.max_pixels)  # (3, S, S)
        if self.augmentation != "none":
            image = augment(image, self.augmentation, self.flip, self.seeds.generator(index))
        return {"inputs": (image - self.mean) / self.std, "targets": torch.tensor(label)}


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


def file_ends_whole(head: bytes, tail: bytes, size: int, image_format: str | None) -> bool:
    """Whether a file ends the way its format ends (PNG's IEND chunk, JPEG's end marker,
    ...): a truncated file does not. False for formats without such a check."""
    tail = tail.rstrip(b"\0")  # some writers pad the end with zeros
    ends = {"PNG": b"IEND\xaeB`\x82", "JPEG": b"\xff\xd9", "MPO": b"\xff\xd9", "GIF": b";"}
    if image_format in ends:
        return tail.endswith(ends[image_format])
    if image_format == "BMP":  # the header states the file size
        return size >= int.from_bytes(head[2:6], "little")
    if image_format == "WEBP":  # so does the RIFF container's
        return size >= int.from_bytes(head[4:8], "little") + 8
    return False


def problem(path: Path, max_pixels: int) -> str | None:
    """Why an image file cannot be used (None: it can). Reads the header and both ends of
    the file; decodes it only when its end is in doubt, and then Pillow decides."""
    try:
        with path.open("rb") as handle:
            head = handle.read(16)
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return "empty file"
            handle.seek(max(size - 16, 0))
            tail = handle.read()
            handle.seek(0)
            Image.MAX_IMAGE_PIXELS = None  # the size is checked here, without a warning
            with Image.open(handle) as image:
                width, height = image.size
                if width * height > max_pixels:
                    return f"{width}x{height} pixels, over data.max_image_pixels ({max_pixels})"
                if not file_ends_whole(head, tail, size, image.format):
                    image.load()  # raises on truncated data
    except UnidentifiedImageError:
        return "not an image Pillow can read"
    except (OSError, SyntaxError, ValueError) as exc:
        return "truncated" if "truncated" in str(exc).lower() else f"cannot be decoded ({exc})"
    return None


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
            f"image file {path} cannot be used: {reason} (fix or remove it, or set "
            "data.skip_bad_files=true to leave it out)"
        )
    if not cfg.skip_bad_files:
        lines = [f"\n  {path.relative_to(root)}: {reason}" for path, reason in bad.items()]
        more = f"\n  ... and {len(bad) - MAX_LISTED} more" if len(bad) > MAX_LISTED else ""
        raise ConfigError(
            f"{len(bad)} of {len(files)} image files in {root} cannot be used (fix or remove "
            "them, or set data.skip_bad_files=true to leave them out):"
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
        train[name] = [files[i] for i in train_index]
        val[name] = [files[i] for i in val_index]
    return train, val


def labelled(
    by_class: dict[str, list[Path]], classes: list[str], split: str
) -> list[tuple[Path, int]]:
    unknown = sorted(set(by_class) - set(classes))
    if unknown:
        raise ConfigError(f"{split} split has classes not seen in training: {', '.join(unknown)}")
    index = {name: i for i, name in enumerate(classes)}
    return [(path, index[name]) for name, files in by_class.items() for path in files]


def channel_stats(
    files: list[tuple[Path, int]], size: int, max_pixels: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel mean and std (3,) over (an evenly spaced subset of) the training images,
    accumulated one image at a time so large images never all sit in memory."""
    total = torch.zeros(3, dtype=torch.float64)  # (3,)
    squares = torch.zeros(3, dtype=torch.float64)  # (3,)
    subset = files[:: max(len(files) // MAX_STATS_IMAGES, 1)]
    for path, _ in subset:
        image = load_image(path, size, max_pixels).double()  # (3, S, S)
        total += image.sum(dim=(1, 2))  # (3,)
        squares += image.square().sum(dim=(1, 2))  # (3,)
    count = len(subset) * size * size
    mean = total / count  # (3,)
    std = (squares / count - mean.square()).clamp(min=0).sqrt()  # (3,)
    return mean.float(), std.float().clamp(min=1e-6)  # a flat channel must not divide by 0


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


def build(cfg: Options, seed: int, state: dict[str, Any] | None = None) -> DataBundle:
    if not cfg.root:
        return DataBundle(*make_splits(cfg, seed))
    train_by_class, val_by_class = load_splits(cfg)
    classes = list(state["classes"]) if state else sorted(train_by_class)
    train_files = labelled(train_by_class, classes, "train")
    val_files = labelled(val_by_class, classes, "val")
    if not val_files:
        raise FileNotFoundError(f"no validation images in {cfg.root}/val/<class>/")
    if state:
        mean, std = state["mean"], state["std"]
    else:
        mean, std = channel_stats(train_files, cfg.image_size, cfg.max_image_pixels)
    size, pixels = cfg.image_size, cfg.max_image_pixels
    spec = DataSpec(num_outputs=len(classes), in_channels=3, image_size=size)
    test_dir = Path(cfg.root).expanduser() / "test"

    def load_test() -> ImageFolder:
        by_class = find_images(test_dir)
        drop_bad_files([by_class], cfg)
        return ImageFolder(labelled(by_class, classes, "test"), size, mean, std, pixels)

    return DataBundle(
        ImageFolder(train_files, size, mean, std, pixels, cfg.augment, cfg.augment_flip, seed),
        ImageFolder(val_files, size, mean, std, pixels),  # evaluation never augments
        spec,
        state={"classes": classes, "mean": mean, "std": std},
        load_test=load_test if test_dir.is_dir() else None,
    )


def raw_inputs(cfg: Options, state: dict[str, Any]) -> RawInputs | None:
    """Image files, folders or globs, prepared exactly as in training; None for a model
    trained on the synthetic images (they have no file format)."""
    if not state:
        return None
    mean, std = state["mean"].view(3, 1, 1), state["std"].view(3, 1, 1)  # (3, 1, 1)

    def prepare(path: Path) -> dict[str, torch.Tensor]:
        image = load_image(path, cfg.image_size, cfg.max_image_pixels)  # (3, S, S)
        return {"inputs": (image - mean) / std}

    steps = {
        "read": "any Pillow image, converted to RGB",
        "resize": [cfg.image_size, cfg.image_size],  # width, height; bilinear
        "scale": 1 / 255,  # pixel bytes to [0, 1]
        "normalize": {"mean": state["mean"].tolist(), "std": state["std"].tolist()},
        "layout": "CHW float32, (pixel * scale - mean) / std per channel",
    }
    return RawInputs(lambda sources: image_files(sources, IMAGE_EXTENSIONS), prepare, steps)
