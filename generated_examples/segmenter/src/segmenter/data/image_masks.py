"""image_masks: images with segmentation masks (ptgen dataset kind "image-masks").

Layout of `data.root`:
    root/train/images/*.png|jpg|jpeg|bmp|tif|tiff|webp
    root/train/masks/<same stem>.png   one mask per image, of the image's size
    root/val/...                       optional; without it `data.val_fraction` of the
                                       training images are held out (the same every run)
    root/test/...                      optional; read only by `evaluate --split test`
A mask holds a class id per pixel (grey or palette-mode PNG: the pixel value is the id),
or, with `data.palette` (one "#rrggbb" colour per class id, in order), class colours that
are mapped to ids; `data.ignore_colour` then marks unlabelled pixels. Pixels whose value
is `data.ignore_index` (default 255) are unlabelled: no loss, not scored. An image without
mask, a mask of another size than its image, an id that is neither a class nor the
ignore index, and a colour not in the palette are one-line errors naming the file.

Images are decoded with Pillow, converted to RGB, resized to data.image_size x
data.image_size (bilinear; masks nearest, so ids are never blended), augmented with their
masks alike (training split only: `data.augment`, the same crop, scale and flip for both,
colour only for the image; see _augment.py) and normalised per channel with the training
split's mean/std. Both splits are decoded once, up front, and held in memory (uint8
images, int16 masks): size the images with data.image_size. Class names and the
statistics go into `bundle.state` (saved in checkpoints), so `predict` prepares images
exactly as training did. With an empty `data.root` the project's synthetic images are
used instead. This file is yours: `ptgen update` never touches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image, ImageOps, UnidentifiedImageError
from torch.utils.data import Dataset

from ..config import ConfigError, option
from ..tasks import DataSpec
from . import DataBundle, hold_out
from ._augment import POLICIES, EpochSeeds, colour_jitter, crop_box
from ._inputs import RawInputs, image_files, to_rgb
from ._synthetic import SyntheticOptions, make_splits

IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"}


@dataclass
class Options(SyntheticOptions):
    """[data] options of this dataset: set them with --set data.KEY=VALUE.

    The synthetic options are used while `root` is empty; `num_classes` also counts the
    classes of id masks (without a palette)."""

    root: str = option("", "folder with train/images/ and train/masks/; empty: synthetic images")
    val_fraction: float = option(
        0.2, "share of the images held out for validation when root has no val/", low=0.0, high=1.0
    )
    palette: tuple[str, ...] = option(
        (), 'mask colours of class ids 0, 1, ... e.g. ["#000000", "#ff0000"]; empty: masks hold ids'
    )
    ignore_colour: str = option(
        "", 'with a palette: the mask colour of unlabelled pixels, e.g. "#ffffff"'
    )
    class_names: tuple[str, ...] = option((), "names of class ids 0, 1, ...; empty: numbered")
    augment: str = option(
        "none",
        "training-split augmentation of images and masks alike (see data/_augment.py)",
        choices=("none", "light", "standard"),
    )
    augment_flip: bool = option(True, "augmentation mirrors images and masks left-right")


def rgb(colour: str, key: str) -> tuple[int, int, int]:
    """ "#rrggbb" as (r, g, b); anything else is a config error naming `key`."""
    text = colour.strip().removeprefix("#")
    if len(text) != 6 or any(c not in "0123456789abcdefABCDEF" for c in text):
        raise ConfigError(f'{key}: {colour!r} is not a colour "#rrggbb"')
    return int(text[0:2], 16), int(text[2:4], 16), int(text[4:6], 16)


def open_image(path: Path) -> Image.Image:
    try:
        with Image.open(path) as image:
            image.load()
            return ImageOps.exif_transpose(image)
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def load_image(path: Path, size: int) -> torch.Tensor:
    """An image file as uint8 pixels (3, size, size)."""
    image = to_rgb(open_image(path)).resize((size, size), Image.Resampling.BILINEAR)
    return torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1).contiguous()  # (3, S, S)


def mask_ids(path: Path, image_size: tuple[int, int], cfg: Options, classes: int) -> np.ndarray:
    """The class ids (H, W) of a mask file of the given (width, height), checked."""
    mask = open_image(path)
    if mask.size != image_size:
        raise ConfigError(
            f"mask {path} is {mask.size[0]}x{mask.size[1]} but its image is "
            f"{image_size[0]}x{image_size[1]}: a mask must have its image's size"
        )
    if cfg.palette:
        colours = np.asarray(mask.convert("RGB"), dtype=np.int64)  # (H, W, 3)
        keys = (colours[..., 0] << 16) | (colours[..., 1] << 8) | colours[..., 2]  # (H, W)
        table = {(r << 16) | (g << 8) | b: i for i, (r, g, b) in enumerate(palette(cfg))}
        if cfg.ignore_colour:
            r, g, b = rgb(cfg.ignore_colour, "data.ignore_colour")
            table[(r << 16) | (g << 8) | b] = cfg.ignore_index
        values, inverse = np.unique(keys, return_inverse=True)
        unknown = [int(v) for v in values if int(v) not in table]
        if unknown:
            found = ", ".join(f"#{v:06x}" for v in unknown[:5])
            raise ConfigError(f"mask {path} has colours not in data.palette: {found}")
        return np.array([table[int(v)] for v in values])[inverse.reshape(keys.shape)]
    if mask.mode not in ("L", "P", "I", "I;16", "1"):
        raise ConfigError(
            f"mask {path} is {mask.mode}, not class ids (grey or palette PNG): "
            "for colour masks set data.palette"
        )
    ids = np.asarray(mask, dtype=np.int64)  # (H, W)
    bad = np.unique(ids[(ids >= classes) & (ids != cfg.ignore_index)])
    if bad.size:
        raise ConfigError(
            f"mask {path} has ids {bad[:5].tolist()}: not a class (0..{classes - 1}, "
            f"data.num_classes={classes}) nor data.ignore_index={cfg.ignore_index}"
        )
    return ids


def palette(cfg: Options) -> list[tuple[int, int, int]]:
    return [rgb(c, f"data.palette[{i}]") for i, c in enumerate(cfg.palette)]


def load_mask(path: Path, image_size: tuple[int, int], cfg: Options, classes: int) -> torch.Tensor:
    """A mask file as class ids (size, size) int16, resized nearest."""
    ids = mask_ids(path, image_size, cfg, classes).astype(np.int32)  # (H, W)
    mask = Image.fromarray(ids).resize((cfg.image_size,) * 2, Image.Resampling.NEAREST)
    return torch.from_numpy(np.asarray(mask).astype(np.int16))  # (S, S)


def find_pairs(split_dir: Path) -> list[tuple[Path, Path]]:
    """(image, mask) files of a split, sorted; an image without its mask is an error."""
    images_dir, masks_dir = split_dir / "images", split_dir / "masks"
    if not images_dir.is_dir() or not masks_dir.is_dir():
        raise FileNotFoundError(f"{split_dir} needs images/ and masks/ folders")
    images = sorted(
        p
        for p in images_dir.iterdir()
        if p.suffix.lower() in IMAGE_EXTENSIONS and not p.name.startswith(".") and p.is_file()
    )
    if not images:
        raise FileNotFoundError(
            f"no images ({', '.join(sorted(IMAGE_EXTENSIONS))}) in {images_dir}"
        )
    pairs = [(image, masks_dir / f"{image.stem}.png") for image in images]
    missing = [image for image, mask in pairs if not mask.is_file()]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise ConfigError(f"image {missing[0]} has no mask {masks_dir / missing[0].stem}.png{more}")
    return pairs


def augment_pair(
    image: torch.Tensor, mask: torch.Tensor, level: str, flip: bool, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """An image (3, H, W) in [0, 1] and its mask (H, W), augmented alike: the same crop,
    scaled back (bilinear for the image, nearest for the mask) and the same flip; colour
    changes the image only. The image gets exactly what _augment.augment gives it."""
    if level == "none":
        return image, mask
    policy = POLICIES[level]
    _, height, width = image.shape
    top, left, h, w = crop_box(height, width, policy, gen)
    size = (height, width)
    crop = image[None, :, top : top + h, left : left + w]  # (1, 3, h, w)
    image = F.interpolate(crop, size=size, mode="bilinear", align_corners=False)[0]  # (3, H, W)
    labels = mask[None, None, top : top + h, left : left + w].float()  # (1, 1, h, w)
    mask = F.interpolate(labels, size=size, mode="nearest-exact")[0, 0].to(mask.dtype)  # (H, W)
    if flip and float(torch.rand((), generator=gen)) < 0.5:
        image, mask = image.flip(-1), mask.flip(-1)  # (3, H, W), (H, W) mirrored left-right
    if policy.jitter > 0:
        image = colour_jitter(image, policy.jitter, gen)  # (3, H, W)
    return image, mask


class ImageMasks(Dataset):
    """Samples {"inputs": (3, S, S) normalised float, "targets": (S, S) class ids}."""

    def __init__(
        self,
        images: torch.Tensor,
        masks: torch.Tensor,
        mean: torch.Tensor,
        std: torch.Tensor,
        augmentation: str = "none",
        flip: bool = True,
        seed: int = 0,
    ) -> None:
        self.images, self.masks = images, masks  # (N, 3, S, S) uint8, (N, S, S) int16
        self.mean, self.std = mean.view(3, 1, 1), std.view(3, 1, 1)  # (3, 1, 1)
        self.augmentation, self.flip, self.seeds = augmentation, flip, EpochSeeds(seed)

    def set_epoch(self, epoch: int) -> None:
        """Called by the training sampler before each epoch: augmentation draws from
        (seed, epoch, index)."""
        self.seeds.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        image = self.images[index].float() / 255.0  # (3, S, S)
        mask = self.masks[index].long()  # (S, S)
        if self.augmentation != "none":
            gen = self.seeds.generator(index)
            image, mask = augment_pair(image, mask, self.augmentation, self.flip, gen)
        return {"inputs": (image - self.mean) / self.std, "targets": mask}


def decode_split(
    pairs: list[tuple[Path, Path]], cfg: Options, classes: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Images (N, 3, S, S) uint8 and masks (N, S, S) int16 of a split, every pair checked."""
    size = cfg.image_size
    images = torch.empty(len(pairs), 3, size, size, dtype=torch.uint8)  # (N, 3, S, S)
    masks = torch.empty(len(pairs), size, size, dtype=torch.int16)  # (N, S, S)
    for i, (image_path, mask_path) in enumerate(pairs):
        with Image.open(image_path) as header:
            image_size = ImageOps.exif_transpose(header).size
        images[i] = load_image(image_path, size)
        masks[i] = load_mask(mask_path, image_size, cfg, classes)
    return images, masks


def channel_stats(images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel mean and std (3,) of uint8 images (N, 3, S, S), as [0, 1] values."""
    pixels = images.double().div(255.0).transpose(0, 1).flatten(1)  # (3, N*S*S)
    return pixels.mean(dim=1).float(), pixels.std(dim=1).float().clamp(min=1e-6)


def build(cfg: Options, seed: int, state: dict[str, Any] | None = None) -> DataBundle:
    if not cfg.root:
        return DataBundle(*make_splits(cfg, seed))
    root = Path(cfg.root).expanduser()
    if not (root / "train").is_dir():
        raise FileNotFoundError(
            f"data.root {root} has no train/ folder (train/images, train/masks)"
        )
    classes = len(cfg.palette) if cfg.palette else cfg.num_classes
    if cfg.class_names and len(cfg.class_names) != classes:
        raise ConfigError(
            f"data.class_names has {len(cfg.class_names)} names for {classes} classes"
        )
    if cfg.ignore_index < classes:
        raise ConfigError(f"data.ignore_index={cfg.ignore_index} is a class id (0..{classes - 1})")
    train_pairs = find_pairs(root / "train")
    if (root / "val").is_dir():
        val_pairs = find_pairs(root / "val")
    else:
        train_index, val_index = hold_out(len(train_pairs), cfg.val_fraction)
        train_pairs, val_pairs = (
            [train_pairs[i] for i in train_index.tolist()],
            [train_pairs[i] for i in val_index.tolist()],
        )
    train_images, train_masks = decode_split(train_pairs, cfg, classes)
    val_images, val_masks = decode_split(val_pairs, cfg, classes)
    mean, std = (state["mean"], state["std"]) if state else channel_stats(train_images)
    names = list(cfg.class_names) or [str(i) for i in range(classes)]
    spec = DataSpec(
        num_outputs=classes, in_channels=3, image_size=cfg.image_size, ignore_index=cfg.ignore_index
    )
    test_dir = root / "test"

    def load_test() -> ImageMasks:
        return ImageMasks(*decode_split(find_pairs(test_dir), cfg, classes), mean, std)

    return DataBundle(
        ImageMasks(train_images, train_masks, mean, std, cfg.augment, cfg.augment_flip, seed),
        ImageMasks(val_images, val_masks, mean, std),  # evaluation never augments
        spec,
        state={"classes": names, "mean": mean, "std": std, "palette": palette(cfg)},
        load_test=load_test if test_dir.is_dir() else None,
    )


def raw_inputs(cfg: Options, state: dict[str, Any]) -> RawInputs | None:
    """Image files, folders or globs, prepared exactly as in training; None for a model
    trained on the synthetic images (they have no file format)."""
    if not state:
        return None
    mean, std = state["mean"].view(3, 1, 1), state["std"].view(3, 1, 1)  # (3, 1, 1)

    def prepare(path: Path) -> dict[str, torch.Tensor]:
        image = load_image(path, cfg.image_size).float() / 255.0  # (3, S, S)
        return {"inputs": (image - mean) / std}

    steps = {
        "read": "any Pillow image, converted to RGB",
        "resize": [cfg.image_size, cfg.image_size],  # width, height; bilinear
        "scale": 1 / 255,  # pixel bytes to [0, 1]
        "normalize": {"mean": state["mean"].tolist(), "std": state["std"].tolist()},
        "layout": "CHW float32, (pixel * scale - mean) / std per channel",
    }
    return RawInputs(lambda sources: image_files(sources, IMAGE_EXTENSIONS), prepare, steps)
