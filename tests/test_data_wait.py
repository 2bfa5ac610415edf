"""Issue 21: a run says when data is the bottleneck, and `data.num_workers = "auto"`.

With the `profiler` feature (template 0.5), the share of step time spent waiting for the
next batch is in metrics.csv (`data_wait`, host time around the loader's next(), no device
sync); above 20% the run ends with one line of advice. Measured on a generated project with
a deliberately slow dataset.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import SLOW_DATASET, generate
from PIL import Image

from ptgen.components import add_component

PKG = "wait_proj"
SMALL = [
    "data.num_samples=64",
    "data.image_size=16",
    "model.width=8",
    "train.batch_size=8",
    "train.max_steps=12",
    "train.log_every=4",
    "train.device=cpu",
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("wait")
    path = generate(where, name="wait-proj", features=("experiments", "profiler"))  # Selection
    (path / "src" / PKG / "data" / "slowsynthetic.py").write_text(SLOW_DATASET)
    return path


def train(
    project: Path, out: Path, *sets: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    args = [a for s in (*SMALL, f"train.out_dir={out}", *sets) for a in ("--set", s)]
    return subprocess.run(
        [sys.executable, "-m", PKG, "train", *args],
        cwd=project,
        env=dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1"),
        capture_output=True,
        text=True,
        timeout=timeout,  # raises TimeoutExpired where a run hangs
    )


def data_wait(out: Path) -> list[float]:
    rows = csv.DictReader(open(out / "metrics.csv", encoding="utf-8"))
    return [float(row["data_wait"]) for row in rows if row["split"] == "train"]


@pytest.mark.slow
def test_a_slow_dataset_shows_in_metrics_and_ends_with_advice(
    project: Path, tmp_path: Path
) -> None:
    slow = train(project, tmp_path / "slow", "data.name=slowsynthetic")
    assert slow.returncode == 0, slow.stderr
    shares = data_wait(tmp_path / "slow")
    assert len(shares) == 3 and all(share > 0.3 for share in shares), shares  # 64 ms a batch
    advice = [line for line in slow.stdout.splitlines() if "waiting for batches" in line]
    assert len(advice) == 1 and "data.num_workers=auto" in advice[0], slow.stdout

    plain = train(project, tmp_path / "plain")  # the default synthetic data, in memory
    assert plain.returncode == 0, plain.stderr
    shares = data_wait(tmp_path / "plain")
    assert len(shares) == 3 and all(0 <= share < 0.2 for share in shares), shares
    assert "waiting for batches" not in plain.stdout


# worker_count's rules, checked in one process of the generated project.
AUTO_RULES = """
import multiprocessing, os, sys
from {pkg}.data import Selection, TensorDictDataset, worker_count

class Files:  # a dataset that reads its samples (not tensors in memory)
    def __len__(self):
        return 4

cores = len(os.sched_getaffinity(0))
tensors = TensorDictDataset([1, 2], [0, 1])
said = [worker_count(3, tensors), worker_count("auto", tensors)]
said += [worker_count("auto", Selection(tensors, [0], None)), worker_count("auto", Files())]
os.environ["LOCAL_WORLD_SIZE"] = "2"
said.append(worker_count("auto", Files()))
multiprocessing.current_process().daemon = True  # a daemonic process has no children
said.append(worker_count("auto", Files()))
print(said == [3, 0, 0, max(cores - 1, 0), max(cores // 2 - 1, 0), 0], said, cores)
"""


def test_auto_workers_follow_the_cores_and_the_data(project: Path) -> None:
    """data.num_workers=auto: one worker per usable core (less the main process's),
    shared by torchrun's processes; none for tensors in memory or in a daemonic process."""
    result = subprocess.run(
        [sys.executable, "-c", AUTO_RULES.format(pkg=PKG)],
        env=dict(os.environ, PYTHONPATH=str(project / "src")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.stdout.startswith("True"), result.stdout + result.stderr


ADVICE = """
import torch
from torch.utils.data import DataLoader
from {pkg}.data import TensorDictDataset
from {pkg}.profiler import data_advice

class Files(torch.utils.data.Dataset):  # read one sample at a time (not in memory)
    def __len__(self):
        return 4

    def __getitem__(self, index):
        return {{"inputs": torch.zeros(2), "targets": torch.tensor(0)}}

tensors = TensorDictDataset(torch.zeros(4, 2), torch.zeros(4))
print(data_advice(0.5, DataLoader(tensors), 32))
print(data_advice(0.5, DataLoader(Files()), 32))
print(data_advice(0.5, DataLoader(Files(), num_workers=1), 32))
"""


def test_data_advice_names_a_remedy_for_the_dataset_at_hand(project: Path) -> None:
    """In memory: workers cannot help, a larger batch can; read per sample: workers (the
    command to paste), one more worker when there are some already."""
    result = subprocess.run(
        [sys.executable, "-c", ADVICE.format(pkg=PKG)],
        env=dict(os.environ, PYTHONPATH=str(project / "src")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    memory, files, workers = result.stdout.splitlines()[-3:]
    assert "--set train.batch_size=128" in memory and "num_workers" not in memory, memory
    assert "--set data.num_workers=auto" in files, files
    assert "--set data.num_workers=2" in workers, workers


@pytest.mark.slow
def test_auto_workers_train_bit_identical_to_the_main_process(
    project: Path, tmp_path: Path
) -> None:
    """The image-folder kind defaults to data.num_workers=auto; with augmentation drawn
    from (seed, epoch, index), its weights equal those of a run without workers."""
    add_component(project, "dataset", "images", "image-folder")
    root = tmp_path / "images"
    for i in range(40):
        split, label = "val" if i % 5 == 0 else "train", f"c{i % 2}"
        (root / split / label).mkdir(parents=True, exist_ok=True)
        Image.effect_noise((20, 20), 40 + i).convert("RGB").save(root / split / label / f"{i}.png")
    sets = ["data.name=images", f"data.root={root}", "data.augment=standard", "train.max_steps=6"]
    auto = train(project, tmp_path / "auto", *sets)
    assert auto.returncode == 0, auto.stderr
    cores = len(os.sched_getaffinity(0))
    assert f"data: {max(cores - 1, 0)} loader worker process(es)" in auto.stderr, auto.stderr
    main = train(project, tmp_path / "main", *sets, "data.num_workers=0")
    assert main.returncode == 0, main.stderr
    got, want = (
        torch.load(tmp_path / run / "last.pt", weights_only=True)["model_state_dict"]
        for run in ("auto", "main")
    )
    assert all(torch.equal(got[name], want[name]) for name in want)


FAILING_DATASET = """
from . import DataBundle
from ._synthetic import SyntheticOptions as Options, make_splits


class Failing:
    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        if index == 5:
            raise ValueError("sample 5 cannot be read")
        return self.dataset[index]


def build(cfg, seed, state=None) -> DataBundle:
    train, val, spec = make_splits(cfg, seed)
    return DataBundle(Failing(train), val, spec)
"""


def test_an_error_in_a_loader_worker_ends_the_run(project: Path, tmp_path: Path) -> None:
    """Workers ignore SIGTERM (a group signal is the main process's to handle), so the run
    kills them at exit: an error raised in one used to leave `train` waiting forever."""
    (project / "src" / PKG / "data" / "failing.py").write_text(FAILING_DATASET)
    result = train(project, tmp_path, "data.name=failing", "data.num_workers=1", timeout=120)
    assert result.returncode == 1, result.stderr
    assert "ValueError: sample 5 cannot be read" in result.stderr
    assert "killed by signal" not in result.stderr  # PyTorch's SIGCHLD handler is not told
