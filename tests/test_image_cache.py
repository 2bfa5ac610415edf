"""Issue 21: the image-folder kind's `data.cache` (none | memory | disk).

The cache holds decoded, resized uint8 images; augmentation applies after it, so every
mode gives the same batches. A disk cache is reused while the folder is unchanged and
rebuilt (with the new pixels) when a file changes; a failed fill leaves no cache file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from helpers import PAGE, fill_disk, generate, run_in_project
from PIL import Image

from ptgen.components import add_component

PKG = "cache_proj"

# Run inside the project: the three modes through the kind's own build(), in one process.
CHECKS = """
import contextlib, io, sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from cache_proj.config import ConfigError
from cache_proj.data import build_data
from cache_proj.data._images import decode
from cache_proj.data.images import Options

root, cache_dir = Path(sys.argv[1]), Path(sys.argv[2])


def splits(cache, augment="none"):
    \"\"\"Every train and val sample of epoch 1 (N, 3, 8, 8), and what the build said.\"\"\"
    cfg = Options(name="images", root=str(root), image_size=8, cache=cache,
                  cache_dir=str(cache_dir), num_workers=0, augment=augment)
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        bundle = build_data(cfg, seed=0)
        bundle.train.set_epoch(1)  # as the training sampler does: fills the cache
        parts = (bundle.train, bundle.val)
        samples = [torch.stack([s[i]["inputs"] for i in range(len(s))]) for s in parts]
    return samples, said.getvalue(), bundle


def cache_files():
    return sorted(cache_dir.iterdir()) if cache_dir.exists() else []


# Same batches with and without the cache, augmented or not.
for augment in ("none", "standard"):
    plain = splits("none", augment)[0]
    assert augment != "none" or cache_files() == []  # cache=none writes nothing
    for mode in ("memory", "disk"):
        cached = splits(mode, augment)[0]
        assert all(torch.equal(a, b) for a, b in zip(plain, cached)), (mode, augment)

# The disk cache is reused: same file, same inode, not rewritten.
(first,) = cache_files()
before = first.stat()
_, said, _ = splits("disk")
assert "reusing the image cache" in said, said
after = first.stat()
assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)

# An image replaced: a new cache (the old one removed) holding the new pixels; the
# temporary file of a fill that was killed (its process gone) is removed too.
killed = cache_dir / ("." + first.name.rpartition("-")[0] + "-0.u8.999999999.tmp")
killed.write_bytes(b"half")
changed = root / "train" / "c0" / "2.png"
old_pixels = decode(changed, 8, 10**8)
Image.new("RGB", (20, 20), (250, 10, 10)).save(changed)
samples, said, bundle = splits("disk")
(second,) = cache_files()
assert second != first and "caching" in said, said
assert not killed.exists()
index = bundle.train.cache.decoded.sources.index(changed)
new_pixels = bundle.train.cache.get(index)
assert torch.equal(new_pixels, decode(changed, 8, 10**8))
assert not torch.equal(new_pixels, old_pixels)
assert torch.equal(samples[0], splits("none")[0][0])

# A fill that fails half way leaves no cache file (and no temporary file) behind.
cfg = Options(name="images", root=str(root), image_size=8, cache_dir=str(cache_dir / "x"))
cfg.num_workers = 0
bundle = build_data(cfg, seed=0)
bundle.train.cache.decoded.sources[len(bundle.train) - 1].write_bytes(b"not an image any more")
try:
    bundle.train.set_epoch(0)
except ConfigError as exc:
    assert "cannot read image" in str(exc)
else:
    raise AssertionError("the fill read a broken file")
assert list((cache_dir / "x").iterdir()) == []
print("ok")
"""


# Run inside the project: a disk cache that does not fit is a one-line error, no crash.
FULL_DISK = """
import sys
from cache_proj.config import ConfigError
from cache_proj.data import build_data
from cache_proj.data.images import Options

cfg = Options(name="images", root=sys.argv[1], image_size=8, cache_dir=sys.argv[2], num_workers=0)
bundle = build_data(cfg, seed=0)
try:
    bundle.train.set_epoch(0)
except ConfigError as exc:
    print(exc)
"""


def make_images(root: Path, count: int) -> None:
    for i in range(count):
        split, label = "val" if i % 5 == 0 else "train", f"c{i % 2}"
        (root / split / label).mkdir(parents=True, exist_ok=True)
        Image.effect_noise((20, 20), 40 + i).convert("RGB").save(root / split / label / f"{i}.png")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = generate(tmp_path_factory.mktemp("cache"), name="cache-proj")
    add_component(path, "dataset", "images", "image-folder")
    return path


def test_cache_modes_agree_and_disk_cache_is_reused_and_invalidated(
    project: Path, tmp_path: Path
) -> None:
    make_images(tmp_path / "images", 30)
    (project / "checks.py").write_text(CHECKS)
    result = run_in_project(project, "checks.py", str(tmp_path / "images"), str(tmp_path / "c"))
    assert result.stdout.strip().endswith("ok"), result.stdout + result.stderr


@pytest.mark.slow
def test_memory_cache_with_a_worker_trains_like_no_cache(project: Path, tmp_path: Path) -> None:
    """The cache is filled before the worker starts and shared with it: the weights equal
    those of a run that decodes every image in the main process."""
    make_images(tmp_path / "images", 40)
    base = ["data.name=images", f"data.root={tmp_path / 'images'}", "data.augment=standard"]
    base += ["train.max_steps=6", "train.batch_size=8", "train.device=cpu", "data.image_size=16"]
    runs = {"cached": ["data.cache=memory", "data.num_workers=1"], "plain": ["data.cache=none"]}
    said = {}
    for name, sets in runs.items():
        args = [a for s in (*base, *sets, f"train.out_dir={tmp_path / name}") for a in ("--set", s)]
        result = run_in_project(project, "-m", PKG, "train", *args)
        assert result.returncode == 0, result.stderr
        said[name] = "data: caching 40 decoded images" in result.stderr
    assert said == {"cached": True, "plain": False}
    got, want = (
        torch.load(tmp_path / name / "last.pt", weights_only=True)["model_state_dict"]
        for name in runs
    )
    assert all(torch.equal(got[key], want[key]) for key in want)


def test_a_disk_cache_on_a_full_disk_is_a_one_line_error(
    project: Path, tmp_path: Path, small_disk: Callable[[int], Path]
) -> None:
    make_images(tmp_path / "images", 30)  # 30 images of 3x8x8: 5760 bytes, over one page
    disk = small_disk(64)
    fill_disk(disk, leave=PAGE)
    (project / "full.py").write_text(FULL_DISK)
    result = run_in_project(project, "full.py", str(tmp_path / "images"), str(disk / "cache"))
    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"cannot write the image cache {disk / 'cache'}"), line
    assert "No space left on device" in line and "data.cache_dir" in line, line
    assert list((disk / "cache").iterdir()) == []  # no partial file left
