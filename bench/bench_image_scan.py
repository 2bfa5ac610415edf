"""What the image-folder kind's check of every file costs next to reading the images.

    PYTHONPATH=src python bench/bench_image_scan.py --files 4000 --repeats 3

Writes a folder of FILES images (half JPEG photos of 400x300, half PNG of 128x128, in 10
classes), generates an image-classification project with the `image-folder` kind and,
alternating, times (1) the check of every file (`drop_bad_files`: header, file end, a
decode only when in doubt) and (2) one pass over the same files as a training epoch
reads them (decode, EXIF, RGB, resize to the default 32x32, normalise: `Images`
items, one process). An epoch also runs the model, so (2) is a lower bound of an epoch.
Prints medians and the ratio; `--json` writes them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ptgen.project import ProjectOptions, new_project

# Runs inside the generated project: times the scan and a read pass, alternating.
SNIPPET = """
import json, sys, time
from pathlib import Path
from scanbench.data._images import ImageCache, Images
from scanbench.data.image_folder import Options, drop_bad_files, find_images
import torch

root, repeats = Path(sys.argv[1]), int(sys.argv[2])
cfg = Options(name="image_folder", root=str(root), cache="none")
by_class = find_images(root / "train")
files = [(p, i) for i, (name, paths) in enumerate(sorted(by_class.items())) for p in paths]
cache = ImageCache([p for p, _ in files], cfg, str(root), "train", ())  # none: decodes each read
dataset = Images(cache, [i for _, i in files], torch.zeros(3), torch.ones(3))
scan, read = [], []
for _ in range(repeats):
    start = time.perf_counter()
    drop_bad_files([find_images(root / "train")], cfg)
    scan.append(time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(len(dataset)):
        dataset[i]
    read.append(time.perf_counter() - start)
print(json.dumps({"files": len(files), "scan": scan, "read": read}))
"""


def write_folder(root: Path, count: int) -> None:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    gradient = np.linspace(0, 255, 400)[None, :, None] * np.ones((300, 1, 3))  # (300, 400, 3)
    for i in range(count):
        folder = root / "train" / f"class{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        if i % 2:
            noise = rng.normal(0, 25, (300, 400, 3))
            pixels = (gradient + noise).clip(0, 255).astype("uint8")
            Image.fromarray(pixels).save(folder / f"{i:05d}.jpg", quality=85)
        else:
            pixels = rng.integers(0, 255, (128, 128, 3), dtype="uint8")
            Image.fromarray(pixels).save(folder / f"{i:05d}.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "images"
        write_folder(root, args.files)
        options = ProjectOptions(name="scanbench", dataset="image-folder")
        project = new_project(options, Path(scratch), run_smoke=False, init_git=False).path
        env = dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")
        command = [sys.executable, "-c", SNIPPET, str(root), str(args.repeats)]
        output = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    result = json.loads(output.stdout.strip().splitlines()[-1])
    scan, read = statistics.median(result["scan"]), statistics.median(result["read"])
    result.update(scan_median=scan, read_median=read, ratio=read / scan)
    print(
        f"{result['files']} files: check {scan:.2f} s ({scan / result['files'] * 1e6:.0f} us/file)"
    )
    print(f"read pass (decode, resize to 32x32) {read:.2f} s; read / check = {read / scan:.1f}x")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
