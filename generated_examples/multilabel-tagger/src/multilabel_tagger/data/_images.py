"""Images decoded once, the same way for every kind that reads images (image-folder, and
hf-datasets in an image project): `decode` a file or encoded bytes, `problem` checks one
cheaply, `ImageCache` keeps the decoded images of a list of sources (data.cache: disk,
memory or none), `Images` serves them normalised and augmented.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch
from PIL import Image, ImageOps, UnidentifiedImageError
from torch.utils.data import DataLoader, Dataset

from ..config import ConfigError
from . import Batch, note, worker_count
from ._augment import EpochSeeds, augment
from ._inputs import RawInputs, image_files, to_rgb

IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff"}
MAX_STATS_IMAGES = 2000  # mean/std are estimated on at most this many training images
Source = Path | IO[bytes]  # an image file, or its encoded bytes
CACHE_FORMAT = "rgb-2"  # in a disk cache's name: change it when decode() changes
BILINEAR = int(Image.Resampling.BILINEAR)  # the filter without data.processor


def decode(source: Source, size: int, max_pixels: int, resample: int = BILINEAR) -> torch.Tensor:
    """One image (a file, or encoded bytes) as uint8 pixels (3, size, size): the cache's."""
    where = source if isinstance(source, Path) else "(encoded bytes)"
    # checked here, as `problem` checks it: Pillow only warns up to twice its limit
    Image.MAX_IMAGE_PIXELS = None  # per call: DataLoader workers may not share it
    try:
        with Image.open(source) as image:  # reads the header only
            if image.width * image.height > max_pixels:
                raise Image.DecompressionBombError(f"{image.width}x{image.height} pixels")
            ImageOps.exif_transpose(image, in_place=True)  # camera photos store a rotation
            rgb = to_rgb(image).resize((size, size), Image.Resampling(resample))
    except Image.DecompressionBombError as exc:
        raise ConfigError(
            f"image {where} has more pixels ({exc}) than data.max_image_pixels ({max_pixels}); "
            "if you trust the file, raise it (--set data.max_image_pixels=N)"
        ) from None
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
        raise ConfigError(f"cannot read image {where}: {exc}") from None
    pixels = torch.frombuffer(bytearray(rgb.tobytes()), dtype=torch.uint8)  # (H*W*3,)
    return pixels.view(size, size, 3).permute(2, 0, 1).contiguous()  # (3, H, W)


def load_image(image: Source, size: int, max_pixels: int, resample: int = BILINEAR) -> torch.Tensor:
    """One image as a float tensor (3, size, size) with values in [0, 1]."""
    return decode(image, size, max_pixels, resample).float() / 255.0  # (3, H, W)


def image_inputs(
    state: dict[str, Any], size: int, max_pixels: int, resample: int = BILINEAR
) -> RawInputs:
    """Image files, folders or globs for `predict` and `serve`, prepared as the training
    images were: decoded as the cache decodes them, normalised with `state`'s statistics."""
    mean, std = state["mean"].view(3, 1, 1), state["std"].view(3, 1, 1)  # (3, 1, 1)

    def prepare(path: Path) -> dict[str, torch.Tensor]:
        return {"inputs": (load_image(path, size, max_pixels, resample) - mean) / std}

    steps = {
        "read": "any Pillow image, EXIF-rotated, converted to RGB",
        "resize": [size, size],  # width, height
        "resample": Image.Resampling(resample).name.lower(),  # Pillow's filter
        "scale": 1 / 255,  # pixel bytes to [0, 1]
        "normalize": {"mean": state["mean"].tolist(), "std": state["std"].tolist()},
        "layout": "CHW float32, (pixel * scale - mean) / std per channel",
    }
    if "processor" in state:  # image-folder's data.processor: the one these steps came from
        steps["processor"] = state["processor"]
    return RawInputs(lambda sources: image_files(sources, IMAGE_EXTENSIONS), prepare, steps)


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


def problem(source: Source, max_pixels: int) -> str | None:
    """Why an image cannot be used (None: it can). Reads the header and both ends of the
    file; decodes it only when its end is in doubt, and then Pillow decides."""
    try:
        with source.open("rb") if isinstance(source, Path) else source as handle:
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


class Decoded(Dataset):
    """The uint8 pixels (3, S, S) of a list of sources, by index: the cache's fill reads
    them through a DataLoader, so that its workers decode in parallel."""

    def __init__(self, sources: Sequence[Any], size: int, max_pixels: int, resample: int) -> None:
        self.sources, self.steps = sources, (size, max_pixels, resample)

    def __len__(self) -> int:
        return len(self.sources)

    def __getitem__(self, index: int) -> torch.Tensor:
        return decode(self.sources[index], *self.steps)  # (3, S, S)


class ImageCache:
    """The decoded, resized images (N, 3, S, S) uint8 of a list of sources; `cfg`: the
    kind's Options (image_size, max_image_pixels, num_workers, cache, cache_dir).

    `fill()` runs in the main process before the loaders' workers start: workers forked
    later read the same memory pages, spawned ones get the tensor through shared memory
    (memory) or reopen the file (disk). A disk cache is named by `where` the sources are,
    `part` and a hash of their content `key` (`cache_file`): any change gives a new name,
    so a stale cache is never read; it is written to a temporary file and renamed, so a
    killed fill never leaves a partial file under that name."""

    def __init__(
        self,
        sources: Sequence[Any],
        cfg: Any,
        where: str,
        part: str,
        key: Iterable[str],
        resample: int = BILINEAR,
    ) -> None:
        self.decoded = Decoded(sources, cfg.image_size, cfg.max_image_pixels, resample)
        self.kind, self.num_workers = cfg.cache, cfg.num_workers
        self.shape = (len(sources), 3, cfg.image_size, cfg.image_size)
        self.path = cache_file(cfg, where, part, key, resample) if cfg.cache == "disk" else None
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

    def channel_stats(self, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-channel mean and std (3,) over (an evenly spaced subset of) the training
        images, the first `count`, accumulated one image at a time so large images never
        all sit in memory; read from the cache when an earlier run filled it, else decoded."""
        total = torch.zeros(3, dtype=torch.float64)  # (3,)
        squares = torch.zeros(3, dtype=torch.float64)  # (3,)
        subset = range(0, count, max(count // MAX_STATS_IMAGES, 1))
        for index in subset:
            image = (self[index].float() / 255.0).double()  # (3, S, S), as load_image gives it
            total += image.sum(dim=(1, 2))  # (3,)
            squares += image.square().sum(dim=(1, 2))  # (3,)
        values = len(subset) * self.shape[2] * self.shape[3]  # per channel
        mean = total / values  # (3,)
        std = (squares / values - mean.square()).clamp(min=0).sqrt()  # (3,)
        return mean.float(), std.float().clamp(min=1e-6)  # a flat channel must not divide by 0

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
        the same sources, and the temporary files of fills that were killed, are removed."""
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


def files_key(files: list[Path], root: Path) -> Iterator[str]:
    """The content key of image files: every file's path (in the sources' order), size and
    modification time, so that any change to them names a new cache."""
    for path in files:
        stat = path.stat()
        yield f"\n{path.relative_to(root)}/{stat.st_size}/{stat.st_mtime_ns}"


def cache_file(cfg: Any, where: str, part: str, key: Iterable[str], resample: int) -> Path:
    """`cache_dir/<where's name>-<part>-<hash of where>-<hash of the content key>.u8`."""
    contents = hashlib.blake2b(
        f"{CACHE_FORMAT}/{resample}/{cfg.image_size}".encode(), digest_size=8
    )
    for piece in key:  # in the sources' order: cache index i is source i
        contents.update(piece.encode())
    place = hashlib.blake2b(where.encode(), digest_size=4).hexdigest()
    name = f"{Path(where).name}-{part}-{place}-{contents.hexdigest()}.u8"
    return Path(cfg.cache_dir).expanduser() / name


def remove_stale(path: Path) -> None:
    """Other caches of the sources `path` caches (their contents changed since), and
    temporary files whose writer is no longer running."""
    sources = path.name.rpartition("-")[0]
    for old in path.parent.glob(f"{sources}-*.u8"):
        if old != path:
            old.unlink(missing_ok=True)
    for partial in path.parent.glob(f".{sources}-*.u8.*.tmp"):
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


class Images(Dataset):
    """Samples {"inputs": (3, S, S) normalised float, "targets": its target} of the cache's
    images from `offset` on, one per target."""

    def __init__(
        self,
        cache: ImageCache,
        targets: Sequence[Any] | torch.Tensor,
        mean: torch.Tensor,
        std: torch.Tensor,
        augmentation: str = "none",
        flip: bool = True,
        seed: int = 0,
        offset: int = 0,
    ) -> None:
        self.cache, self.offset = cache, offset  # sample i is the cache's image offset + i
        self.targets = torch.as_tensor(targets)  # (N,) or (N, C): class weights need no decoding
        self.mean, self.std = mean.view(3, 1, 1), std.view(3, 1, 1)  # (3, 1, 1)
        self.augmentation, self.flip, self.seeds = augmentation, flip, EpochSeeds(seed)

    def set_epoch(self, epoch: int) -> None:
        """Called by the training sampler before each epoch, in the main process: fills the
        cache (once); augmentation draws from (seed, epoch, index)."""
        self.cache.fill()
        self.seeds.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        image = self.cache[self.offset + index].float() / 255.0  # (3, S, S), as load_image gives it
        if self.augmentation != "none":
            image = augment(image, self.augmentation, self.flip, self.seeds.generator(index))
        return {"inputs": (image - self.mean) / self.std, "targets": self.targets[index]}

    @property
    def held_in_memory(self) -> bool:
        """Whether a sample is a slice of the decoded images and nothing more (data.cache
        memory or disk, no augmentation): loader workers would only copy them."""
        return self.cache.kind != "none" and self.augmentation == "none"

    def __getitems__(self, indices: list[int] | torch.Tensor) -> Sequence[Any]:
        """A batch from the cache in one index operation, as __getitem__ would give each
        image; one image at a time without a filled cache, or with augmentation (drawn
        per image)."""
        if self.augmentation != "none" or self.cache.get(0) is None:
            return [self[i] for i in indices]
        rows = torch.as_tensor(indices, dtype=torch.long)  # (B,)
        images = self.cache.pixels[rows + self.offset].float() / 255.0  # (B, 3, S, S)
        return Batch({"inputs": (images - self.mean) / self.std, "targets": self.targets[rows]})
