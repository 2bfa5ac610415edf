"""image_folder: images in class folders (ptgen dataset kind "image-folder").

Layout of `data.root`:
    root/train/<class>/*.png|jpg|jpeg|bmp|gif|webp
    root/val/<class>/...        optional; without it `data.val_fraction` of each
                                training class is held out (the same files every run)
    root/test/<class>/...       optional; read only by `evaluate --split test`
Images are decoded with Pillow, converted to RGB, resized to data.image_size x
data.image_size and normalised per channel with the mean/std of the training split.
Class names and those statistics go into `bundle.state` (saved in checkpoints), so
evaluation prepares images exactly as training did, and so does `predict`, from the
checkpoint alone (`raw_inputs`). With an empty `data.root` the project's synthetic images
are used instead. This file is yours: `ptgen update` never
touches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from PIL import Image, UnidentifiedImageError
from torch.utils.data import Dataset

from ..config import ConfigError, option
from ..tasks import DataSpec
from . import DataBundle, hold_out
from ._inputs import RawInputs, image_files
from ._synthetic import SyntheticOptions, make_splits

IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp"}
MAX_STATS_IMAGES = 2000  # mean/std are estimated on at most this many training images


@dataclass
class Options(SyntheticOptions):
    """[data] options of this dataset: set them with --set data.KEY=VALUE.

    The synthetic options are used while `root` is empty."""

    root: str = option("", "folder with train/<class>/ (and val/<class>/); empty: synthetic images")
    val_fraction: float = option(
        0.2, "share of each class held out for validation when root has no val/", low=0.0, high=1.0
    )
    max_image_pixels: int = option(
        89_478_485, "larger images are refused (Pillow's decompression-bomb guard)", low=1
    )


def load_image(path: Path, size: int, max_pixels: int) -> torch.Tensor:
    """One image file as a float tensor (3, size, size) with values in [0, 1]."""
    Image.MAX_IMAGE_PIXELS = max_pixels  # per call: DataLoader workers may not share it
    try:
        with Image.open(path) as image:
            rgb = image.convert("RGB").resize((size, size), Image.Resampling.BILINEAR)
    except Image.DecompressionBombError:
        raise ConfigError(
            f"image {path} has more pixels than data.max_image_pixels ({max_pixels}); "
            "raise it if you trust the file"
        ) from None
    except (OSError, UnidentifiedImageError) as exc:
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
    ) -> None:
        self.files, self.size, self.max_pixels = files, size, max_pixels
        self.mean, self.std = mean.view(3, 1, 1), std.view(3, 1, 1)  # (3, 1, 1)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        path, label = self.files[index]
        image = load_image(path, self.size, self.max_pixels)  # (3, S, S)
        return {"inputs": (image - self.mean) / self.std, "targets": torch.tensor(label)}


def find_images(split_dir: Path) -> dict[str, list[Path]]:
    """{class name: sorted image files} of every class folder; an empty one is an error."""
    found = {}
    for class_dir in sorted(p for p in split_dir.iterdir() if p.is_dir()):
        files = sorted(
            p for p in class_dir.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS
        )
        found[class_dir.name] = files
    empty = [name for name, files in found.items() if not files]
    if empty:
        raise ConfigError(
            f"class folder(s) without images in {split_dir}: {', '.join(empty)} "
            f"(images are {', '.join(sorted(IMAGE_EXTENSIONS))})"
        )
    return found


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
    """{class: files} of the train and val splits (val held out of train when absent)."""
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
    if (root / "val").is_dir():
        return train_by_class, find_images(root / "val")
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
    size = cfg.image_size
    spec = DataSpec(num_outputs=len(classes), in_channels=3, image_size=size)
    test_dir = Path(cfg.root).expanduser() / "test"

    def load_test() -> ImageFolder:
        test_files = labelled(find_images(test_dir), classes, "test")
        return ImageFolder(test_files, size, mean, std, cfg.max_image_pixels)

    return DataBundle(
        ImageFolder(train_files, size, mean, std, cfg.max_image_pixels),
        ImageFolder(val_files, size, mean, std, cfg.max_image_pixels),
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
