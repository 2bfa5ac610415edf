"""Shared helpers: generate real projects (real Copier, real black) into temporary dirs."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ptgen.features import features, serves
from ptgen.project import ProjectOptions, new_project

PAGE = 4096  # tmpfs allocates whole pages

REPO = Path(__file__).resolve().parents[1]
# Every feature a user can choose (--with); the kinds bring the others themselves.
ALL_FEATURES = tuple(name for name, spec in features().items() if not spec.kinds_only)


def features_for(task: str) -> tuple[str, ...]:
    """Every feature a user can choose for `task` (imbalance serves classification only)."""
    return tuple(name for name in ALL_FEATURES if serves(name, task))


def generate(tmp_path: Path, name: str = "demo", **options: object) -> Path:
    """A project generated through the library API, without the smoke run."""
    return new_project(ProjectOptions(name=name, **options), tmp_path, run_smoke=False).path


def run_in_project(
    project: Path, *args: str, timeout: int = 600
) -> subprocess.CompletedProcess[str]:
    """Run `python -m <args>` inside a generated project with its src/ on the path."""
    # One thread per process: two test workers on two cores, more threads only fight.
    env = dict(
        os.environ,
        PYTHONPATH=str(project / "src"),
        PYTHONDONTWRITEBYTECODE="1",
        OMP_NUM_THREADS="1",
    )
    return subprocess.run(
        [sys.executable, *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# The project's command line run in one process for each bad setting; prints what it said.
TRAIN_ERRORS = """
import contextlib, importlib, io, json, sys

main = importlib.import_module(f"{sys.argv[1]}.cli").main
said = []
for case in sys.argv[3:]:
    sets = [arg for setting in case.split() for arg in ("--set", setting)]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["train", "--set", f"train.out_dir={sys.argv[2]}", *sets])
    said.append([code, err.getvalue()])
print(json.dumps(said))
"""


def train_errors(project: Path, package: str, out_dir: Path, *settings: str) -> list[str]:
    """What `train` says for each of `settings` (space-separated KEY=VALUE, one --set each),
    asserted to be one line starting with "error: " and exit status 1 (one process for all:
    one torch import)."""
    result = run_in_project(project, "-c", TRAIN_ERRORS, package, str(out_dir), *settings)
    assert result.returncode == 0, result.stderr
    said = json.loads(result.stdout.splitlines()[-1])
    for (code, message), setting in zip(said, settings, strict=True):
        assert code == 1 and message.startswith("error: ") and message.count("\n") == 1, (
            setting,
            message,
        )
    return [message for _, message in said]


def run_ptgen(
    *args: str, cwd: Path | None = None, timeout: int = 600
) -> subprocess.CompletedProcess[str]:
    """The real command line in a subprocess, as a user would run it."""
    return subprocess.run(
        [sys.executable, "-m", "ptgen", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write_text(path: Path, rows: int = 150) -> Path:
    """text<TAB>label rows of film reviews whose label shows in one word (pos / neg)."""
    words = {"pos": "great lovely fine good", "neg": "awful bad poor terrible"}
    with path.open("w", newline="") as f:
        writer = csv.writer(f, delimiter="\t")
        writer.writerow(["text", "label"])
        for i in range(rows):
            label = "pos" if i % 2 else "neg"
            writer.writerow([f"This film was {words[label].split()[i % 4]}, truly! #{i}", label])
    return path


def tree_snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


# A dataset component (synthetic images) fetched slowly enough that a SIGKILL lands
# mid-run on any machine; tests write it into a project as data/slowsynthetic.py.
SLOW_DATASET = """
import os
import time

from . import DataBundle
from ._synthetic import SyntheticOptions as Options, make_splits


class Slow:
    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        # 64 ms per batch of 8 (SLOW_SAMPLE_S: more): a kill lands well before the end
        time.sleep(float(os.environ.get("SLOW_SAMPLE_S", "0.008")))
        return self.dataset[index]

    def set_epoch(self, epoch):  # an augmenting dataset draws from the epoch
        if hasattr(self.dataset, "set_epoch"):
            self.dataset.set_epoch(epoch)


def build(cfg, seed, state=None) -> DataBundle:
    train, val, spec = make_splits(cfg, seed)
    return DataBundle(Slow(train), val, spec)
"""


def free_bytes(path: Path) -> int:
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def fill_disk(disk: Path, leave: int) -> None:
    """Take all free space on `disk` but `leave` bytes (rounded up to whole pages)."""
    keep = -(-leave // PAGE) * PAGE
    with open(disk / "filler", "wb") as handle:
        os.posix_fallocate(handle.fileno(), 0, free_bytes(disk) - keep)
    assert free_bytes(disk) == keep


def process_tree(pid: int) -> list[int]:
    """`pid` and every process below it (Linux /proc), parents first."""
    tree, i = [pid], 0
    while i < len(tree):
        for children in Path(f"/proc/{tree[i]}/task").glob("*/children"):
            with contextlib.suppress(OSError):  # a process that has just ended
                tree += [int(child) for child in children.read_text().split()]
        i += 1
    return tree


def kill_tree_once(proc: subprocess.Popen, path: Path, timeout: float = 300) -> None:
    """SIGKILL `proc` and every process below it as soon as `path` exists, while the run
    is still going: a crash of the whole job. torchrun starts each worker in a session of
    its own, so killing the launcher's process group alone would leave them training."""
    deadline = time.monotonic() + timeout
    try:
        while not path.exists():
            assert proc.poll() is None and time.monotonic() < deadline, f"no {path.name} appeared"
            time.sleep(0.01)
        assert proc.poll() is None, "training finished before the kill"
    finally:
        kill_tree(proc)


def kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL `proc` and all below it, and return once none of them is alive. The tree is
    stopped first (SIGSTOP, until no new process appears), so that no DataLoader worker
    started in between survives its parent holding the run's lock, and the return waits
    for every killed process's exit, when its open files (the lock) are released."""
    stopped: list[int] = []
    while True:
        new = [pid for pid in process_tree(proc.pid) if pid not in stopped]
        if not new:
            break
        for pid in new:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        stopped += new
        time.sleep(0.05)  # a fork under way when the tree was read shows up next time
    for pid in stopped:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 60
    while any(alive(pid) for pid in stopped):
        assert time.monotonic() < deadline, "killed processes still running after 60 s"
        time.sleep(0.01)


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has exited: its files are closed)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# The cnn whose 5th training forward pass returns NaN (train.on_nonfinite); tests write
# it into a project as models/nanmodel.py.
NAN_MODEL = """
import torch

from . import cnn
from .cnn import Options


class NaNAt5(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner, self.calls = inner, 0

    def forward(self, inputs):
        out = self.inner(inputs)
        if self.training:
            self.calls += 1
            if self.calls == 5:
                out = out * float("nan")
        return out


def build(cfg, spec):
    return NaNAt5(cnn.build(cfg, spec))
"""
