"""docs/extending.md, followed step by step in a copy of templates/: a new task
(`sequence-regression`: two files plus a line in the synthetic kind's meta.yml) and a new
model kind (`bag`: two files) render, pass the generated project's own tests and train; a
new feature (`stepcount`) lands only in the projects that choose it."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import run_in_project

from ptgen.options import kinds_for_task, tasks
from ptgen.paths import templates_dir
from ptgen.project import ProjectOptions, new_project

TASK_YML = """\
summary: "Predict a number from a token sequence (mean squared error; MAE)"
modality: sequence
objective: regression
default_model: bag
default_dataset: synthetic
"""

SYNTHETIC = '''\
"""Synthetic token sequences; the target is the share of tokens in the upper half of the
vocabulary."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import Dataset

from ..config import DataConfig, option
from ..tasks import DataSpec
from . import TensorDictDataset
from ._sequences import pad_collate


@dataclass
class SyntheticOptions(DataConfig):
    num_samples: int = option(256, "synthetic data: training samples", low=1)
    max_length: int = option(32, "longest token sequence", low=4)
    vocab_size: int = option(100, "vocabulary size, padding included", low=8)


def make_splits(cfg: SyntheticOptions, seed: int) -> tuple[Dataset, Dataset, DataSpec]:
    gen = torch.Generator().manual_seed(seed)

    def split(n: int) -> TensorDictDataset:
        lengths = torch.randint(4, cfg.max_length + 1, (n,), generator=gen)  # (N,)
        inputs = [torch.randint(1, cfg.vocab_size, (int(t),), generator=gen) for t in lengths]
        high = [(x > cfg.vocab_size // 2).float().mean(dim=0, keepdim=True) for x in inputs]
        return TensorDictDataset(inputs, torch.stack(high))  # targets (N, 1)

    train, val = split(cfg.num_samples), split(max(cfg.num_samples // 4, 1))
    return train, val, DataSpec(num_outputs=1, vocab_size=cfg.vocab_size)


def example_batch(spec: DataSpec, batch_size: int) -> dict[str, torch.Tensor]:
    tokens = [torch.randint(1, spec.vocab_size, (n,)) for n in range(1, batch_size + 1)]
    batch = pad_collate([{"inputs": t, "targets": torch.zeros(1)} for t in tokens])
    return {key: value for key, value in batch.items() if key != "targets"}
'''

BAG_META = """\
summary: "Mean of token embeddings over the real tokens, linear head"
tasks: [sequence-classification, sequence-regression]
"""

BAG_MODEL = '''\
"""{{ name }}: the mean of the token embeddings, then a linear head (kind "bag")."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from ..config import ModelConfig, option
from ..tasks import DataSpec


@dataclass
class Options(ModelConfig):
    width: int = option(16, "embedding size", low=1)
    dropout: float = option(0.0, "dropout before the head", low=0.0, high=1.0)


class Bag(nn.Module):
    def __init__(self, vocab: int, outputs: int, width: int, dropout: float, gc: bool) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, width, padding_idx=0)
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(width, outputs))
        self.grad_checkpointing = gc

    def repeated_blocks(self) -> list[nn.Module]:
        return [self.embedding]  # what train.strategy=fsdp shards on its own

    def forward(
        self, inputs: torch.Tensor, lengths: torch.Tensor, padding_mask: torch.Tensor
    ) -> torch.Tensor:
        if self.grad_checkpointing and self.training:
            x = checkpoint(self.embedding, inputs, use_reentrant=False)  # (B, T, C)
        else:
            x = self.embedding(inputs)  # (B, T, C)
        keep = (~padding_mask).unsqueeze(-1).to(x.dtype)  # (B, T, 1)
        pooled = (x * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1)  # (B, C)
        return self.head(pooled)  # (B, outputs)


def build(cfg: Options, spec: DataSpec) -> nn.Module:
    return Bag(spec.vocab_size, spec.num_outputs, cfg.width, cfg.dropout, cfg.grad_checkpointing)
'''


def add_to_tasks(meta: Path, task: str) -> None:
    """The one line docs/extending.md asks of each fitting kind: the task in `tasks`."""
    text = meta.read_text(encoding="utf-8")
    meta.write_text(re.sub(r"tasks: \[", f"tasks: [{task}, ", text), encoding="utf-8")


@pytest.fixture
def extended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of templates/ with the new task and the new kind, used by ptgen."""
    copy = tmp_path / "templates"
    shutil.copytree(templates_dir(), copy, ignore=shutil.ignore_patterns("__pycache__"))
    task_dir = copy / "project" / "_tasks" / "sequence-regression"
    task_dir.mkdir()
    (task_dir / "task.yml").write_text(TASK_YML, encoding="utf-8")
    (task_dir / "synthetic.py").write_text(SYNTHETIC, encoding="utf-8")
    add_to_tasks(copy / "dataset" / "synthetic" / "meta.yml", "sequence-regression")
    (copy / "model" / "bag").mkdir()
    (copy / "model" / "bag" / "meta.yml").write_text(BAG_META, encoding="utf-8")
    (copy / "model" / "bag" / "model.py.jinja").write_text(BAG_MODEL, encoding="utf-8")
    monkeypatch.setenv("PTGEN_TEMPLATES_DIR", str(copy))
    monkeypatch.setenv("PTGEN_CACHE_DIR", str(tmp_path / "cache"))
    return copy


def test_the_copy_lists_the_new_task_and_kind(extended: Path) -> None:
    assert tasks()["sequence-regression"].objective == "regression"
    assert kinds_for_task("model", "sequence-regression") == ["bag"]
    assert kinds_for_task("dataset", "sequence-regression") == ["synthetic"]


@pytest.mark.slow
def test_a_new_task_and_kind_render_test_green_and_train(extended: Path, tmp_path: Path) -> None:
    options = ProjectOptions(name="newtask", task="sequence-regression")
    project = new_project(options, tmp_path / "out", run_smoke=False, init_git=False).path
    package = project / "src" / "newtask"
    assert (package / "models" / "bag.py").is_file()
    assert "class Regression" in (package / "tasks.py").read_text(encoding="utf-8")
    tests = run_in_project(project, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    smoke = run_in_project(project, "-m", "newtask", "smoke", "--steps", "3")
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert smoke.stdout.count("PASS") == 4


STEPCOUNT = '''\
"""The stepcount feature: the number of optimizer steps, written to OUT_DIR/steps.txt."""

from __future__ import annotations

from pathlib import Path

from .monitor import Tracker


class StepCounter(Tracker):
    def __init__(self, out_dir: Path) -> None:
        self.path, self.steps = out_dir / "steps.txt", 0

    def step(self) -> None:
        self.steps += 1

    def close(self, interrupted: bool) -> None:
        self.path.write_text(f"{self.steps}\\n", encoding="utf-8")
'''
TRACKER_PART = """\
    from .stepcount import StepCounter

    found.append(StepCounter(run.out_dir))
"""


def add_feature(templates: Path) -> None:
    """docs/extending.md's "A new feature": one folder (feature.yml, its part for train.py's
    `trackers` point) and its file, plus its name in copier.yml's registration lists."""
    folder = templates / "project" / "_features" / "stepcount"
    (folder / "train.py").mkdir(parents=True)
    (folder / "feature.yml").write_text(
        'summary: "Write the step count to OUT_DIR/steps.txt"\n'
        "files:\n  - src/{{package_name}}/stepcount.py\n"
    )
    (folder / "train.py" / "trackers.py").write_text(TRACKER_PART)
    (templates / "project" / "src" / "{{package_name}}" / "stepcount.py").write_text(STEPCOUNT)
    copier_yml = templates / "project" / "copier.yml"
    text = copier_yml.read_text(encoding="utf-8")
    text = text.replace("summary, sweep,", "stepcount, summary, sweep,", 1)  # feature_names
    copier_yml.write_text(text.replace("'profiler']", "'profiler', 'stepcount']", 1))


def test_a_new_feature_lands_only_in_the_projects_that_choose_it(
    extended: Path, tmp_path: Path
) -> None:
    add_feature(extended)
    chosen = ProjectOptions(name="counted", features=("stepcount",))
    project = new_project(chosen, tmp_path / "a", run_smoke=False, init_git=False).path
    plain = new_project(ProjectOptions(name="plain"), tmp_path / "b", run_smoke=False).path
    out = tmp_path / "run"
    settings = ["train.max_steps=3", "train.epochs=1", f"train.out_dir={out}"]
    args = [a for s in settings for a in ("--set", s)]

    trained = run_in_project(project, "-m", "counted", "train", *args)

    assert trained.returncode == 0, trained.stdout + trained.stderr
    assert (out / "steps.txt").read_text() == "3\n"
    subprocess.run(["black", "--check", "-q", "-l", "100", "."], cwd=project, check=True)
    subprocess.run(["ruff", "check", "-q", "."], cwd=project, check=True)
    traces = [p for p in plain.rglob("*") if p.is_file() and b"stepcount" in p.read_bytes()]
    assert traces == [] and "stepcount" in (project / ".copier-answers.yml").read_text()
