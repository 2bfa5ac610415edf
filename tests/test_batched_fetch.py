"""Issue 35: data held in memory is fetched a batch at a time (`__getitems__`: one index
operation per batch), giving exactly the batches of the per-sample path.

For tables (TensorDictDataset), token arrays (TokenDataset, also bucketed by length) and
cached images (ImageFolder with data.cache), each in a generated project: the project's
own training and validation loaders (plain, resumed mid-epoch, rank 1 of 2, the balanced
sampler) against `collate([dataset[i] for i in indices])` over the same batch indices,
key by key, values and dtypes; and the training loader's direct path (MemoryLoader)
against DataLoader's own iterator.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

from helpers import generate
from test_component_kinds import write_images, write_table

SAME_BATCHES = """
import sys
import torch
from torch.utils.data import DataLoader, default_collate
from {pkg}.config import load_config
from {pkg}.data import build_data, build_loaders
from {pkg}.runtime import DistInfo

weighted = sys.argv[1] == "weighted"  # the imbalance feature's balanced sampler
config = load_config(overrides=sys.argv[2:])
bundle = build_data(config.data, config.train.seed)
collate = bundle.collate_fn or default_collate


def per_sample(loader):
    for indices in loader.batch_sampler:
        yield collate([loader.dataset[int(i)] for i in indices])


def same(a, b):
    return list(a) == list(b) and all(
        a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]) for k in a
    )


runs = [(DistInfo(), None, 0), (DistInfo(rank=1, world_size=2), None, 8)]
runs += [(DistInfo(), torch.rand(len(bundle.train)), 16)] if weighted else []
for info, weights, skip in runs:
    extra = (weights,) if weighted else ()
    train, val, sampler = build_loaders(bundle, config, info, torch.device("cpu"), *extra)
    sampler.set_epoch(1, skip=skip)  # epoch 1, resumed `skip` samples in
    for loader in (train, val):
        fetched = loader.dataset.__getitems__(list(range(3)))
        assert not isinstance(fetched, list), type(fetched)  # the batched path, not a fallback
        batched, single = list(loader), list(per_sample(loader))
        assert len(batched) == len(single) > 0, (len(batched), len(single))
        assert all(same(a, b) for a, b in zip(batched, single)), loader
    # training batches of data in memory skip DataLoader's iterator (MemoryLoader); the same
    direct, own = list(train), list(DataLoader.__iter__(train))
    assert type(train).__name__ == "MemoryLoader" and len(direct) == len(own) > 0, type(train)
    assert all(same(a, b) for a, b in zip(direct, own))
print("same", val.batch_size, train.batch_sampler.batch_size)
"""


def same_batches(project: Path, pkg: str, *sets: str) -> str:
    """Every batch of the batched path equals the per-sample one; with the imbalance feature,
    also for the balanced sampler's draws."""
    weighted = "weighted" if (project / "src" / pkg / "imbalance.py").is_file() else "plain"
    result = subprocess.run(
        [sys.executable, "-c", SAME_BATCHES.format(pkg=pkg), weighted, *sets],
        cwd=project,
        env=dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.split()[-3:]


def write_texts(path: Path, rows: int = 160) -> Path:
    """Texts of 2 to 14 words (so batches pad), labelled by one of their words."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f, delimiter="\t")
        writer.writerow(["text", "label"])
        for i in range(rows):
            label = ("pos", "neg")[i % 2]
            writer.writerow([" ".join([label, *(f"w{j}" for j in range(i % 13 + 1))]), label])
    return path


def test_tables_batched_like_per_sample(tmp_path: Path) -> None:
    project = generate(tmp_path, "fetch-tab", task="tabular-regression", dataset="csv")
    data = write_table(tmp_path / "t.csv", rows=200)
    said = same_batches(project, "fetch_tab", f"data.root={data}", "train.batch_size=8")
    assert said == ["same", "512", "8"], said  # 64 x 8: the auto evaluation batch


def test_token_arrays_batched_like_per_sample(tmp_path: Path) -> None:
    kinds = {"task": "sequence-classification", "dataset": "text", "features": ("imbalance",)}
    project = generate(tmp_path, "fetch-seq", **kinds)
    data = write_texts(tmp_path / "t.tsv")
    for bucket in ("false", "true"):
        sets = (f"data.root={data}", "train.batch_size=8", f"data.bucket_by_length={bucket}")
        assert same_batches(project, "fetch_seq", *sets, "train.eval_batch_size=5")[0] == "same"


def test_cached_images_batched_like_per_sample(tmp_path: Path) -> None:
    project = generate(tmp_path, "fetch-img", dataset="image-folder", features=("imbalance",))
    root = write_images(tmp_path / "images")
    for cache in ("memory", "disk"):
        sets = [f"data.root={root}", f"data.cache={cache}", "data.num_workers=0"]
        sets += [f"data.cache_dir={tmp_path / 'cache'}", "train.batch_size=8"]
        assert same_batches(project, "fetch_img", *sets)[0] == "same"
