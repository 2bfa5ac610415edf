"""Images/s of the image-folder kind's training loader, with and without data.cache,
against a hand-written PIL DataLoader with the same workers.

    PYTHONPATH=src python bench/bench_image_loader.py --images 2000 \
        --json bench/bench_image_loader.json

Writes IMAGES photo-like JPEGs of 500x375 (smooth colour gradients, 12 random ellipses and
rectangles, Gaussian noise of std 12, JPEG quality 90: decoding costs what a photo's
does) in 10 classes under train/, generates an image-classification project with the
`image-folder` kind and, in one process per worker count (0 and 1), iterates the
training split (80%; 20% held out) for two epochs per contender, batch 32, at the
default data.image_size (32):
  hand-written  open, convert("RGB"), resize, to tensor, normalise: a plain Dataset
  none          the kind, data.cache=none (decodes every epoch)
  memory        data.cache=memory: epoch 1 includes the fill (train + val images)
  disk          data.cache=disk, no cache yet: epoch 1 includes the fill
  disk reused   data.cache=disk in a new dataset: the file of the run before is reused
The files are read once before timing, so every contender finds them in the page cache.
Then, because wall time on a shared machine moves by +-30% between rounds, the two
uncached readers' CPU time per image (this process, no workers), alternating per image.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from _common import generate_project, machine, print_table, write_json  # noqa: E402

# Runs inside the generated project (package benchproj), one process per worker count.
SNIPPET = """
import json, sys, time
from pathlib import Path

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from benchproj.data import build_data
from benchproj.data.image_folder import Options

root, cache_dir = Path(sys.argv[1]), Path(sys.argv[2])
workers, rounds = int(sys.argv[3]), int(sys.argv[4])


class HandWritten(Dataset):
    def __init__(self, files, size, mean, std):
        self.files, self.size = files, size
        self.mean, self.std = mean.view(3, 1, 1), std.view(3, 1, 1)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        path, label = self.files[i]
        with Image.open(path) as image:
            rgb = image.convert("RGB").resize((self.size, self.size), Image.Resampling.BILINEAR)
        pixels = torch.frombuffer(bytearray(rgb.tobytes()), dtype=torch.uint8)
        image = pixels.view(self.size, self.size, 3).permute(2, 0, 1).float() / 255.0
        return {"inputs": (image - self.mean) / self.std, "targets": torch.tensor(label)}


def epochs(dataset, fill):
    loader = DataLoader(dataset, batch_size=32, num_workers=workers, persistent_workers=workers > 0)
    rates = []
    for epoch in range(2):
        start = time.perf_counter()
        if fill:
            dataset.set_epoch(epoch)  # as the training sampler does: the first fills the cache
        count = sum(len(batch["targets"]) for batch in loader)
        rates.append(count / (time.perf_counter() - start))
    return rates


def bundle(cache):
    cfg = Options(name="image_folder", root=str(root), cache=cache, cache_dir=str(cache_dir))
    cfg.num_workers = workers
    return build_data(cfg, seed=0)


# [epoch 1, epoch 2] images/s; disk: a run without a cache, then a run reusing its cache
def contender(name):
    if name == "hand-written":
        plain = bundle("none").train
        return epochs(HandWritten(plain.files, 32, plain.mean, plain.std), False)
    if name != "disk":
        return epochs(bundle(name).train, True)
    for path in cache_dir.glob("*.u8"):
        path.unlink()  # no cache yet
    return epochs(bundle("disk").train, True) + epochs(bundle("disk").train, True)


for path in root.rglob("*.jpg"):
    path.read_bytes()  # into the page cache for every contender
names = ["hand-written", "none", "memory", "disk"]
rates = {name: [] for name in names}
for r in range(rounds):  # interleaved: the order rotates every round
    for name in names[r % 4 :] + names[: r % 4]:
        rates[name].append(contender(name))


def cpu_per_image():  # ms of this process's CPU per image, the two uncached readers alternating
    plain = bundle("none").train
    readers = [HandWritten(plain.files, 32, plain.mean, plain.std), plain]
    spent = [0.0, 0.0]
    for i in range(len(plain)):
        for k in (i % 2, 1 - i % 2):  # who goes first alternates
            start = time.process_time()
            readers[k][i]
            spent[k] += time.process_time() - start
    return [1000 * t / len(plain) for t in spent]


cpu = cpu_per_image() if workers == 0 else None
print(json.dumps({"images": len(bundle("none").train), "rates": rates, "cpu_ms": cpu}))
"""


def write_photos(root: Path, count: int) -> None:
    """Photo-like 500x375 JPEGs: gradients, shapes and noise, quality 90."""
    import numpy as np
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:375, 0:500] / np.array([375.0, 500.0])[:, None, None]  # (2, 375, 500)
    for i in range(count):
        start, across, down = rng.uniform(0, 255, 3), *rng.uniform(-120, 120, (2, 3))
        base = start + across * x[..., None] + down * y[..., None]  # (375, 500, 3)
        image = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8))  # (375, 500, 3)
        draw = ImageDraw.Draw(image)
        for _ in range(12):
            x0, y0 = rng.integers(0, 450), rng.integers(0, 330)
            box = (x0, y0, x0 + rng.integers(20, 200), y0 + rng.integers(20, 150))
            colour = tuple(int(v) for v in rng.integers(0, 256, 3))
            (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=colour)
        noisy = np.asarray(image, dtype=np.float32) + rng.normal(0, 12, (375, 500, 3))
        folder = root / "train" / f"class{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        photo = Image.fromarray(noisy.clip(0, 255).astype(np.uint8))
        photo.save(folder / f"{i:05d}.jpg", quality=90)


def measure(project: Path, root: Path, workers: int, rounds: int) -> dict:
    """Every contender's [epoch 1, epoch 2(, reused run's epoch 1, 2)] images/s, per round."""
    cache = str(root.parent / "cache")
    result = subprocess.run(
        [sys.executable, "-c", SNIPPET, str(root), cache, str(workers), str(rounds)],
        cwd=project,
        env={"PYTHONPATH": str(project / "src"), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "photos"
        write_photos(root, args.images)
        project = generate_project(Path(scratch), dataset="image-folder")
        runs = {workers: measure(project, root, workers, args.rounds) for workers in (0, 1)}
    rows, table = [], {}
    for workers, run in runs.items():
        medians = {name: summarise(rounds) for name, rounds in run["rates"].items()}
        medians["disk reused"] = medians["disk"][2:]
        hand = medians["hand-written"]
        for name, (first, second, *_) in medians.items():
            ratios = [first / hand[0], second / hand[1]]
            rows.append([workers, name, first, second, *ratios])
            table[f"{workers}/{name}"] = {"epoch1": first, "epoch2": second}
            table[f"{workers}/{name}"].update(ratio1=ratios[0], ratio2=ratios[1])
    headers = ["workers", "loader", "epoch 1 img/s", "epoch 2 img/s", "x hand (1)", "x hand (2)"]
    print_table(headers, rows)
    hand_ms, ptgen_ms = runs[0]["cpu_ms"]
    print(f"uncached CPU per image: hand-written {hand_ms:.2f} ms, ptgen {ptgen_ms:.2f} ms")
    table["cpu_ms_per_image"] = {"hand-written": hand_ms, "none": ptgen_ms}
    payload = {"command": " ".join(sys.argv), "train_images": runs[0]["images"]}
    payload.update(rounds=args.rounds, medians=table, raw={w: r["rates"] for w, r in runs.items()})
    write_json(args.json, {**payload, "machine": machine()})


def summarise(rounds: list[list[float]]) -> list[float]:
    """The median of each column over the rounds."""
    return [statistics.median(column) for column in zip(*rounds, strict=True)]


if __name__ == "__main__":
    main()
