"""image_folder: images with label sets (ptgen dataset kind "image-folder", multi-label).

Layout of `data.root`:
    root/train/**/*.png|jpg|jpeg|bmp|gif|webp|tif|tiff   any sub-folders
    root/val/...                optional; without it `data.val_fraction` of the training
                                images is held out (the same files every run)
    root/test/...               optional; read only by `evaluate --split test`
    root/labels.csv             `data.labels_file`: each image's labels, by its path
                                relative to root. CSV: a header, then `file,labels` rows,
                                the labels joined by `data.label_separator` ("|"); or
                                JSON: {"train/a.png": ["cat", "dog"], ...}
An image missing from the labels file, or an entry naming no image under root, is an
error; an empty label set (an empty cell, or []) is a sample with none of the labels. The
labels are those that occur in the training split, sorted.
Hidden files and folders (.DS_Store, ._photo.jpg, .ipynb_checkpoints/) are ignored.

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
(`raw_inputs`).

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
runs until a file of the folder changes; "memory" holds them for this run only; "none"
decodes every epoch. The cache is filled before the first epoch, in parallel, in the main
process, so the loader's workers share it; augmentation still applies to every image read
from it.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image, ImageOps, UnidentifiedImageError
from torch.utils.data import DataLoader, Dataset

from ..config import ConfigError, option
from ..tasks import DataSpec
from . import Batch, DataBundle, hold_out, note, worker_count
from ._augment import EpochSeeds, augment
from ._inputs import RawInputs, image_files, to_rgb
from ._synthetic import SyntheticOptions, make_splits

IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff"}
MAX_STATS_IMAGES = 2000  # mean/std are estimated on at most this many training images
MAX_LISTED = 50  # bad files named in the error; the count covers them all
CACHE_FORMAT = (
    "rgb-2"  # part of a disk cache's name (with the filter): change it when decode() does
)
BILINEAR = int(Image.Resampling.BILINEAR)  # the filter without data.processor


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
    root: str = option(
        "", "folder with train/ (and val/) of images and data.labels_file; empty: synthetic images"
    )
    val_fraction: float = option(
        0.2,
        "share of the training images held out for validation when root has no val/",
        low=0.0,
        high=1.0,
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
    labels_file: str = option(
        "labels.csv",
        "each image's labels: CSV file,labels or JSON {file: [labels]} (relative to root)",
    )
    label_separator: str = option("|", "separates the labels of a CSV labels cell")
    processor: str = option(
        "", "Hugging Face image processor (model.pretrained's) deciding size, filter, mean and std"
    )


def decode(path: Path, size: int, max_pixels: int, resample: int = BILINEAR) -> torch.Tensor:
    """One image file as uint8 pixels (3, size, size): what the cache holds."""
    # checked here, as `problem` checks it: Pillow only warns up to twice its limit
    Image.MAX_IMAGE_PIXELS = None  # per call: DataLoader workers may not share it
    try:
        with Image.open(path) as image:  # reads the header only
            if image.width * image.height > max_pixels:
                raise Image.DecompressionBombError(f"{image.width}x{image.height} pixels")
            ImageOps.exif_transpose(image, in_place=True)  # camera photos store a rotation
            rgb = to_rgb(image).resize((size, size), Image.Resampling(resample))
    except Image.DecompressionBombError as exc:
        raise ConfigError(
            f"image {path} has more pixels ({exc}) than data.max_image_pixels ({max_pixels}); "
            "if you trust the file, raise it (--set data.max_image_pixels=N)"
        ) from None
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
        raise ConfigError(f"cannot read image {path}: {exc}") from None
    pixels = torch.frombuffer(bytearray(rgb.tobytes()), dtype=torch.uint8)  # (H*W*3,)
    return pixels.view(size, size, 3).permute(2, 0, 1).contiguous()  # (3, H, W)


def load_image(path: Path, size: int, max_pixels: int, resample: int = BILINEAR) -> torch.Tensor:
    """One image file as a float tensor (3, size, size) with values in [0, 1]."""
    return decode(path, size, max_pixels, resample).float() / 255.0  # (3, H, W)


class Decoded(Dataset):
    """The uint8 pixels (3, S, S) of a list of files, by index: the cache's fill reads
    them through a DataLoader, so that its workers decode in parallel."""

    def __init__(
        self, files: list[Path], size: int, max_pixels: int, resample: int = BILINEAR
    ) -> None:
        self.files, self.size, self.max_pixels, self.resample = files, size, max_pixels, resample

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> torch.Tensor:
        return decode(self.files[index], self.size, self.max_pixels, self.resample)  # (3, S, S)


class ImageCache:
    """The decoded, resized images (N, 3, S, S) uint8 of a list of files.

    `fill()` runs in the main process before the loaders' workers start: workers forked
    later read the same memory pages, spawned ones get the tensor through shared memory
    (memory) or reopen the file (disk). A disk cache is named by a hash of every file's
    path, size and modification time, the image size and CACHE_FORMAT: any change to the
    folder gives a new name, so a stale cache is never read; it is written to a temporary
    file and renamed, so a killed fill never leaves a partial file under that name."""

    def __init__(
        self, files: list[Path], cfg: Options, part: str, resample: int = BILINEAR
    ) -> None:
        self.decoded = Decoded(files, cfg.image_size, cfg.max_image_pixels, resample)
        self.kind, self.num_workers = cfg.cache, cfg.num_workers
        self.shape = (len(files), 3, cfg.image_size, cfg.image_size)
        self.path = cache_file(files, cfg, part, resample) if cfg.cache == "disk" else None
        self.pixels: torch.Tensor | None = None  # (N, 3, S, S) uint8 once filled
        self.looked = False  # whether this process has looked for an existing disk cache
        self.filled = False

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if self.path is not None:  # a spawned worker maps the file itself, never copies it
            state.update(pixels=None, looked=False)
        return state

    def __getitem__(self, index: int) -> torch.Tensor:
        """Image `index` (3, S, S) uint8: from the cache when it holds it, else decoded."""
        cached = self.get(index)
        return cached if cached is not None else self.decoded[index]

    def get(self, index: int) -> torch.Tensor | None:
        """Image `index` (3, S, S) uint8, or None when the cache has not been filled."""
        if self.pixels is None and not self.looked:
            self.looked = True
            self.pixels = self.open()  # a disk cache an earlier process filled
        return None if self.pixels is None else self.pixels[index]

    def open(self) -> torch.Tensor | None:
        """The disk cache's pixels if its file exists whole (else None), memory-mapped."""
        if self.path is None or not self.path.is_file():
            return None
        if self.path.stat().st_size != np.prod(self.shape):
            return None
        pixels = np.memmap(self.path, np.uint8, mode="c", shape=self.shape)  # "c": never written
        return torch.from_numpy(pixels)  # (N, 3, S, S)

    def fill(self) -> None:
        """Decode every image once (in parallel) unless the cache holds them already."""
        if self.kind == "none" or self.filled:
            return
        self.filled, self.looked = True, True
        self.pixels = self.pixels if self.pixels is not None else self.open()
        if self.pixels is not None:
            note(f"reusing the image cache {self.path} ({len(self.decoded)} images)")
            return
        start, megabytes = time.perf_counter(), np.prod(self.shape) / 1e6
        where = "memory" if self.path is None else str(self.path)
        note(f"caching {len(self.decoded)} decoded images ({megabytes:.0f} MB) in {where} ...")
        if self.path is None:
            self.pixels = torch.empty(self.shape, dtype=torch.uint8)  # (N, 3, S, S)
            self.decode_into(self.pixels)
        else:
            self.pixels = self.write_file()
        note(f"cached {len(self.decoded)} images in {time.perf_counter() - start:.1f} s")

    def decode_into(self, pixels: torch.Tensor) -> None:
        """Every image decoded, in order, into pixels (N, 3, S, S)."""
        workers = worker_count(self.num_workers, self.decoded)
        # Its own generator: the loader's seed never draws from the global RNG (training's).
        batches = DataLoader(
            self.decoded, batch_size=64, num_workers=workers, generator=torch.Generator()
        )
        done = 0
        for batch in batches:  # (B, 3, S, S)
            pixels[done : done + len(batch)] = batch
            done += len(batch)

    def write_file(self) -> torch.Tensor:
        """Fill the disk cache: a temporary file, renamed once whole; the older caches of
        the same folder, and the temporary files of fills that were killed, are removed."""
        assert self.path is not None
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with partial.open("wb") as handle:
                reserve(handle.fileno(), int(np.prod(self.shape)))
            pixels = np.memmap(partial, np.uint8, mode="r+", shape=self.shape)
            self.decode_into(torch.from_numpy(pixels))
            pixels.flush()
            del pixels
            os.replace(partial, self.path)
        except OSError as exc:
            raise ConfigError(
                f"cannot write the image cache {self.path}: {exc.strerror or exc} "
                "(--set data.cache_dir=ANOTHER_FOLDER, or --set data.cache=memory)"
            ) from None
        finally:
            partial.unlink(missing_ok=True)
        remove_stale(self.path)
        opened = self.open()
        assert opened is not None
        return opened


def remove_stale(path: Path) -> None:
    """Other caches of the folder `path` caches (its contents changed since), and
    temporary files whose writer is no longer running."""
    folder = path.name.rpartition("-")[0]
    for old in path.parent.glob(f"{folder}-*.u8"):
        if old != path:
            old.unlink(missing_ok=True)
    for partial in path.parent.glob(f".{folder}-*.u8.*.tmp"):
        pid = partial.name.split(".")[-2]
        try:
            os.kill(int(pid), 0)  # signal 0: only asks whether the process exists
        except ProcessLookupError:
            partial.unlink(missing_ok=True)
        except (OSError, ValueError):
            pass  # alive (perhaps another user's), or not a name this code wrote


def reserve(fd: int, size: int) -> None:
    """The file's whole size on disk now, so that a full disk is an error here rather than
    a crash (SIGBUS) when the memory map is written."""
    if hasattr(os, "posix_fallocate"):
        os.posix_fallocate(fd, 0, size)
    else:  # macOS, Windows: a sparse file, its space taken as it is written
        os.ftruncate(fd, size)


def cache_file(files: list[Path], cfg: Options, part: str, resample: int = BILINEAR) -> Path:
    """`cache_dir/<folder>-<part>-<hash of where the folder is>-<hash of its contents>.u8`."""
    root = Path(cfg.root).expanduser()
    key = f"{CACHE_FORMAT}/{resample}/{cfg.image_size}"
    contents = hashlib.blake2b(key.encode(), digest_size=8)
    for path in files:  # in the dataset's order: cache index i is file i
        stat = path.stat()
        contents.update(f"\n{path.relative_to(root)}/{stat.st_size}/{stat.st_mtime_ns}".encode())
    where = hashlib.blake2b(str(root.resolve()).encode(), digest_size=4).hexdigest()
    name = f"{root.resolve().name}-{part}-{where}-{contents.hexdigest()}.u8"
    return Path(cfg.cache_dir).expanduser() / name


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
        cache: ImageCache | None = None,
        offset: int = 0,
        resample: int = BILINEAR,
    ) -> None:
        self.files, self.size, self.max_pixels, self.resample = files, size, max_pixels, resample
        self.targets = [label for _, label in files]  # class weights need no decoding
        self.mean, self.std = mean.view(3, 1, 1), std.view(3, 1, 1)  # (3, 1, 1)
        self.augmentation, self.flip, self.seeds = augmentation, flip, EpochSeeds(seed)
        self.cache, self.offset = cache, offset  # file i is the cache's image offset + i

    def set_epoch(self, epoch: int) -> None:
        """Called by the training sampler before each epoch, in the main process: fills the
        cache (once); augmentation draws from (seed, epoch, index)."""
        if self.cache is not None:
            self.cache.fill()
        self.seeds.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        path, label = self.files[index]
        if self.cache is not None:
            pixels = self.cache[self.offset + index]  # (3, S, S) uint8
        else:
            pixels = decode(path, self.size, self.max_pixels, self.resample)  # (3, S, S) uint8
        image = pixels.float() / 255.0  # (3, S, S), as load_image gives it
        if self.augmentation != "none":
            image = augment(image, self.augmentation, self.flip, self.seeds.generator(index))
        return {"inputs": (image - self.mean) / self.std, "targets": torch.tensor(label)}

    @property
    def held_in_memory(self) -> bool:
        """Whether a sample is a slice of the decoded images and nothing more (data.cache
        memory or disk, no augmentation): loader workers would only copy them."""
        return self.cache is not None and self.cache.kind != "none" and self.augmentation == "none"

    def __getitems__(self, indices: list[int] | torch.Tensor) -> Sequence[Any]:
        """A batch from the cache in one index operation, as __getitem__ would give each
        image; one image at a time without a filled cache, or with augmentation (drawn
        per image)."""
        if self.cache is None or self.augmentation != "none" or self.cache.get(0) is None:
            return [self[i] for i in indices]
        rows = torch.as_tensor(indices, dtype=torch.long) + self.offset  # (B,)
        images = self.cache.pixels[rows].float() / 255.0  # (B, 3, S, S)
        targets = torch.tensor([self.targets[i] for i in indices])  # (B,)
        return Batch({"inputs": (images - self.mean) / self.std, "targets": targets})


def visible(path: Path, base: Path) -> bool:
    """Not hidden: no part of the path below `base` starts with "." (.DS_Store, ._x.jpg)."""
    return not any(part.startswith(".") for part in path.relative_to(base).parts)


def find_images(split_dir: Path) -> dict[str, list[Path]]:
    """{"": sorted image files} of a split folder and all its sub-folders (one group: the
    labels come from the labels file); a folder without images is an error."""
    files = sorted(
        p
        for p in split_dir.rglob("*")
        if p.suffix.lower() in IMAGE_EXTENSIONS and visible(p, split_dir) and p.is_file()
    )
    if not files:
        raise ConfigError(f"no images ({', '.join(sorted(IMAGE_EXTENSIONS))}) in {split_dir}")
    return {"": files}


def read_labels(cfg: Options) -> dict[str, list[str]]:
    """{image path relative to root (posix): its labels} from data.labels_file; every
    entry must name an image under root/train, val or test."""
    root = Path(cfg.root).expanduser()
    path = root / Path(cfg.labels_file).expanduser()  # an absolute labels_file stays as is
    if not path.is_file():
        raise FileNotFoundError(
            f"data.labels_file {path} does not exist: it maps each image to its labels "
            "(CSV file,labels or JSON {file: [labels]})"
        )
    try:
        if path.suffix.lower() == ".json":
            raw = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=list)
            if not isinstance(raw, list) or not all(isinstance(p, tuple) for p in raw):
                raise ValueError("expected an object {file: [labels]}")
            entries = [
                (
                    f"entry {i} ({k!r})",
                    str(k),
                    v.split(cfg.label_separator) if isinstance(v, str) else v,
                )
                for i, (k, v) in enumerate(raw, 1)
            ]
        else:
            with open(path, newline="", encoding="utf-8") as handle:
                reader = csv.reader(handle)
                next(reader, None)  # the header names the columns
                entries = [
                    (f"row {reader.line_num}", row[0], row[1].split(cfg.label_separator))
                    for row in reader
                    if row
                ]
    except (ValueError, IndexError, UnicodeDecodeError) as exc:
        raise ConfigError(f"data.labels_file {path} cannot be read: {exc}") from exc
    labels: dict[str, list[str]] = {}
    first: dict[str, str] = {}  # where each file's entry is
    for where, file, names in entries:
        key, found = Path(file).as_posix(), sorted({str(label).strip() for label in names} - {""})
        if labels.get(key, found) != found:
            raise ConfigError(
                f"data.labels_file {path}: {first[key]} and {where} give {key} different labels "
                f"({'|'.join(labels[key])} and {'|'.join(found)}): keep one"
            )
        labels[key] = found
        first.setdefault(key, where)
    unknown = [file for file in labels if not (root / file).is_file()]
    if unknown:
        raise ConfigError(
            f"data.labels_file {path} names {len(unknown)} file(s) not under {root}: "
            f"{', '.join(unknown[:5])}"
        )
    return labels


def labelled(
    by_class: dict[str, list[Path]],
    sets: dict[str, list[str]],
    classes: list[str],
    root: Path,
    split: str,
) -> list[tuple[Path, list[float]]]:
    """(file, multi-hot targets over `classes`) of a split; a file without an entry in the
    labels file is an error; labels that training lacks are left out (with a note)."""
    files = [path for paths in by_class.values() for path in paths]
    missing = [
        path.relative_to(root).as_posix()
        for path in files
        if path.relative_to(root).as_posix() not in sets
    ]
    if missing:
        raise ConfigError(
            f"{len(missing)} {split} image(s) have no entry in data.labels_file: "
            f"{', '.join(missing[:5])}"
        )
    index = {name: i for i, name in enumerate(classes)}
    unseen = sorted(
        {name for path in files for name in sets[path.relative_to(root).as_posix()]} - set(index)
    )
    if unseen:
        note(f"{split} split: labels not seen in training are ignored: {', '.join(unseen)}")
    result = []
    for path in files:
        targets = [0.0] * len(classes)
        for name in sets[path.relative_to(root).as_posix()]:
            if name in index:
                targets[index[name]] = 1.0
        result.append((path, targets))
    return result


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
                    return (
                        f"{width}x{height} pixels, over data.max_image_pixels ({max_pixels}); "
                        f"if you trust it: --set data.max_image_pixels={width * height}"
                    )
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


def channel_stats(cache: ImageCache, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel mean and std (3,) over (an evenly spaced subset of) the training images,
    the cache's first `count`, accumulated one image at a time so large images never all
    sit in memory; read from the cache when an earlier run filled it, else decoded."""
    total = torch.zeros(3, dtype=torch.float64)  # (3,)
    squares = torch.zeros(3, dtype=torch.float64)  # (3,)
    subset = range(0, count, max(count // MAX_STATS_IMAGES, 1))
    for index in subset:
        image = (cache[index].float() / 255.0).double()  # (3, S, S), as load_image gives it
        total += image.sum(dim=(1, 2))  # (3,)
        squares += image.square().sum(dim=(1, 2))  # (3,)
    values = len(subset) * cache.shape[2] * cache.shape[3]  # per channel
    mean = total / values  # (3,)
    std = (squares / values - mean.square()).clamp(min=0).sqrt()  # (3,)
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
    root, sets = Path(cfg.root).expanduser(), read_labels(cfg)
    seen = {
        name
        for path in train_by_class[""]
        for name in sets.get(path.relative_to(root).as_posix(), [])
    }
    classes = list(state["classes"]) if state else sorted(seen)
    if not classes:
        raise ConfigError(f"data.labels_file gives the training images of {root} no labels at all")
    train_files = labelled(train_by_class, sets, classes, root, "train")
    val_files = labelled(val_by_class, sets, classes, root, "val")
    if not val_files:
        raise FileNotFoundError(f"no validation images in {cfg.root}/val/<class>/")
    # One cache for both splits: the training sampler's first set_epoch fills it.
    cache = ImageCache([path for path, _ in train_files + val_files], cfg, "trainval", resample)
    if state:
        mean, std = state["mean"], state["std"]
    elif "mean" in steps:
        mean, std = steps["mean"], steps["std"]
    else:
        mean, std = channel_stats(cache, len(train_files))
    size, pixels = cfg.image_size, cfg.max_image_pixels
    spec = DataSpec(num_outputs=len(classes), in_channels=3, image_size=size)
    test_dir = Path(cfg.root).expanduser() / "test"

    def load_test() -> ImageFolder:
        by_class = find_images(test_dir)
        drop_bad_files([by_class], cfg)
        files = labelled(by_class, sets, classes, root, "test")
        cache = ImageCache([path for path, _ in files], cfg, "test", resample)
        cache.fill()  # only `evaluate --split test` asks: now, before its loader starts
        return ImageFolder(files, size, mean, std, pixels, cache=cache, resample=resample)

    return DataBundle(
        ImageFolder(
            train_files,
            size,
            mean,
            std,
            pixels,
            cfg.augment,
            cfg.augment_flip,
            seed,
            cache,
            resample=resample,
        ),
        ImageFolder(  # evaluation never augments
            val_files,
            size,
            mean,
            std,
            pixels,
            cache=cache,
            offset=len(train_files),
            resample=resample,
        ),
        spec,
        state={"classes": classes, "mean": mean, "std": std, **steps},
        load_test=load_test if test_dir.is_dir() else None,
    )


def raw_inputs(cfg: Options, state: dict[str, Any]) -> RawInputs | None:
    """Image files, folders or globs, prepared exactly as in training; None for a model
    trained on the synthetic images (they have no file format)."""
    if not state:
        return None
    mean, std = state["mean"].view(3, 1, 1), state["std"].view(3, 1, 1)  # (3, 1, 1)
    size, resample = state.get("image_size", cfg.image_size), state.get("resample", BILINEAR)

    def prepare(path: Path) -> dict[str, torch.Tensor]:
        image = load_image(path, size, cfg.max_image_pixels, resample)  # (3, S, S)
        return {"inputs": (image - mean) / std}

    steps = {
        "read": "any Pillow image, converted to RGB",
        "resize": [size, size],  # width, height
        "resample": Image.Resampling(resample).name.lower(),  # Pillow's filter
        "scale": 1 / 255,  # pixel bytes to [0, 1]
        "normalize": {"mean": state["mean"].tolist(), "std": state["std"].tolist()},
        "layout": "CHW float32, (pixel * scale - mean) / std per channel",
    }
    if "processor" in state:
        steps["processor"] = state["processor"]  # the image processor these came from
    return RawInputs(lambda sources: image_files(sources, IMAGE_EXTENSIONS), prepare, steps)
