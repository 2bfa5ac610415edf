"""Every task x model kind x dataset kind renders clean (and, for sequence datasets,
variable x fixed length), with a config of only the keys the project reads; amp x compile x
grad-checkpointing are covered pairwise for every task, and all eight flag sets across the
kind combinations. A fixed sample of combinations also smoke-trains (the slow tier).
"""

from __future__ import annotations

import ast
import itertools
import py_compile
import subprocess
from pathlib import Path

import pytest
import tomllib
import yaml
from helpers import generate, run_in_project

from ptgen.lint import lint_paths
from ptgen.options import default_component_name, kinds_for_task, tasks

COMBINATIONS = [
    (task.name, model, dataset, variable)
    for task in tasks().values()
    for model in kinds_for_task("model", task.name)
    for dataset in kinds_for_task("dataset", task.name)
    for variable in ([True, False] if task.modality == "sequence" else [None])
]
FLAGS = list(itertools.product([False, True], repeat=3))  # amp, compile, grad_checkpointing
# every pair of flags takes all four value pairs in these four sets (an orthogonal array)
PAIRWISE_FLAGS = [flags for flags in FLAGS if sum(flags) % 2 == 0]
# the first combination of each model kind and each dataset kind of a task: the ones whose
# components are also rendered with the flags flipped (a component is one kind's files)
FIRST_OF_KIND = {
    combo
    for key in ((1,), (2, 3))
    for combo in {
        tuple(combo[i] for i in (0, *key)): combo for combo in reversed(COMBINATIONS)
    }.values()
}


def unread_config_keys(project: Path) -> list[str]:
    """Keys of configs/default.toml that no code of the package reads (outside config.py,
    which only declares and validates them): a key is read where `.key` is accessed."""
    config = tomllib.loads((project / "configs/default.toml").read_text(encoding="utf-8"))
    read = set()
    for path in project.glob("src/*/**/*.py"):
        if path.name != "config.py":
            tree = ast.parse(path.read_text(encoding="utf-8"))
            read |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    keys = ["task"] + [f"{s}.{k}" for s in ("data", "model", "train") for k in config[s]]
    return [key for key in keys if key.rpartition(".")[2] not in read]


CHECKED: set[str] = set()  # the Python files (path in the project, text) checked already


def check_clean(projects: list[Path], tmp_path: Path) -> None:
    """Parses, byte-compiles, black-stable, ruff-clean, ptgen-lint-clean, and every config
    key is read somewhere. A Python file already checked in this process, at the same place
    in a project with the same text, is not checked again (most files are the same in many
    combinations)."""
    files = []
    for project in projects:
        tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
        assert unread_config_keys(project) == [], project
        for path in project.rglob("*.y*ml"):
            yaml.safe_load(path.read_text(encoding="utf-8"))
        for path in project.rglob("*.py"):
            key = f"{path.relative_to(project)}\0{path.read_text(encoding='utf-8')}"
            if key not in CHECKED:
                CHECKED.add(key)
                files.append(path)
    if not files:
        return
    for path in files:
        py_compile.compile(str(path), doraise=True, cfile=str(tmp_path / "bytecode.pyc"))
    names = [str(p) for p in files]
    subprocess.run(["black", "--check", "-q", "-l", "100", *names], check=True)
    subprocess.run(["ruff", "check", "-q", *names], check=True)
    findings = lint_paths(files)
    assert findings == [], [f"{f.path}:{f.line} {f.code} {f.message}" for f in findings]


@pytest.mark.parametrize("task", list(tasks()))
def test_every_flag_combination_renders_clean(tmp_path: Path, task: str) -> None:
    """amp x compile x grad-checkpointing pairwise, for each task, with its default kinds."""
    projects = []
    for amp, compile_, gc in PAIRWISE_FLAGS:
        project = generate(
            tmp_path / f"{int(amp)}{int(compile_)}{int(gc)}",
            name="combo",
            task=task,
            amp=amp,
            compile=compile_,
            grad_checkpointing=gc,
        )
        config = tomllib.loads((project / "configs/default.toml").read_text(encoding="utf-8"))
        assert (config["train"]["amp"], config["train"]["compile"]) == (amp, compile_)
        assert config["model"]["grad_checkpointing"] == gc
        projects.append(project)
    check_clean(projects, tmp_path)


@pytest.mark.parametrize(("task", "model", "dataset", "variable"), COMBINATIONS)
def test_every_kind_combination_renders_clean(
    tmp_path: Path, task: str, model: str, dataset: str, variable: bool | None
) -> None:
    """Each task x model kind x dataset kind, under a different flag set each; components
    do not depend on the flags (asserted), so with the test above this covers the product."""
    index = COMBINATIONS.index((task, model, dataset, variable))
    amp, compile_, gc = FLAGS[index % len(FLAGS)]
    options = {"amp": amp, "compile": compile_, "grad_checkpointing": gc}
    kinds = {"model": model, "dataset": dataset, "variable_length": variable}
    project = generate(tmp_path / "a", "combo", task=task, **kinds, **options)
    config = tomllib.loads((project / "configs/default.toml").read_text(encoding="utf-8"))
    assert config["model"]["name"] == default_component_name(model)
    assert config["data"]["name"] == default_component_name(dataset)
    check_clean([project], tmp_path)
    if (task, model, dataset, variable) not in FIRST_OF_KIND:
        return  # this model kind's and dataset kind's files were compared with flags flipped
    flipped = {key: not value for key, value in options.items()}
    other = generate(tmp_path / "b", "combo", task=task, **kinds, **flipped)
    for component in ("src/combo/models", "src/combo/data", "tests"):
        for path in (project / component).glob("*.py"):
            if path.name.startswith(("test_model_", "test_data_")) or "/tests" not in str(path):
                assert path.read_bytes() == (other / component / path.name).read_bytes(), path


SMOKE_SAMPLE = [
    ("image-classification", "cnn", "synthetic", ["--amp", "--grad-checkpointing"]),
    ("sequence-classification", "transformer", "synthetic", ["--amp"]),
    ("tabular-regression", "mlp", "synthetic", ["--grad-checkpointing"]),
]


@pytest.mark.slow
@pytest.mark.parametrize(("task", "model", "dataset", "flags"), SMOKE_SAMPLE)
def test_sample_smoke_trains(
    tmp_path: Path, task: str, model: str, dataset: str, flags: list[str]
) -> None:
    if model not in kinds_for_task("model", task):
        pytest.skip(f"model kind {model} not available")
    options = {flag.strip("-").replace("-", "_"): True for flag in flags}
    project = generate(tmp_path, name="sample", task=task, model=model, dataset=dataset, **options)
    result = run_in_project(project, "-m", "sample", "smoke", "--steps", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASS") == 4
