"""`ptgen new project`: Copier copy of the infrastructure, plus the first model and dataset.

Everything is rendered, smoke-tested and committed in a temporary directory
beside the target, then moved into place: a failed run leaves the disk as it was.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ptgen import git
from ptgen.components import ProjectInfo, plan_component
from ptgen.defaults import write_defaults
from ptgen.errors import ConflictError, PtgenError
from ptgen.options import (
    TaskSpec,
    check_kind,
    check_task,
    default_component_name,
    package_name,
)
from ptgen.smoke import SmokeReport, smoke
from ptgen.template_source import resolve_template


@dataclass
class ProjectOptions:
    name: str
    task: str = "image-classification"  # a task of `ptgen list`
    model: str | None = None  # model kind; the task's default when None
    dataset: str | None = None  # dataset kind; the task's default when None
    description: str = "A PyTorch project"
    author: str = ""
    amp: bool = False
    compile: bool = False
    grad_checkpointing: bool = False
    variable_length: bool | None = None  # sequence datasets: padded per batch (default) or not


@dataclass
class NewProjectResult:
    path: Path
    files: list[str]
    committed: bool
    smoke: SmokeReport | None


def new_project(
    options: ProjectOptions,
    output_dir: Path = Path("."),
    *,
    run_smoke: bool = True,
    init_git: bool = True,
    dry_run: bool = False,
    force: bool = False,
    progress: Callable[[str], None] = lambda message: None,
) -> NewProjectResult:
    """Generate a project into output_dir/NAME (see ProjectOptions); returns what was done."""
    package = package_name(options.name)
    task = check_task(options.task)
    model_kind = options.model or task.default_model
    dataset_kind = options.dataset or task.default_dataset
    check_kind("model", model_kind, task.name)
    check_kind("dataset", dataset_kind, task.name)
    target = output_dir / options.name
    _check_target(target, force)
    scratch_parent = None if dry_run else _writable_parent(output_dir)
    with tempfile.TemporaryDirectory(prefix=".ptgen-", dir=scratch_parent) as scratch:
        staged = Path(scratch) / options.name
        progress("rendering the project template")
        _render(options, package, task, model_kind, dataset_kind, staged)
        files = sorted(str(p.relative_to(staged)) for p in staged.rglob("*") if p.is_file())
        if dry_run:
            return NewProjectResult(target, files, False, None)
        report = None
        if run_smoke:
            progress("smoke-testing: training a few steps")
            report = smoke(staged)
        committed = init_git and git.init_and_commit(staged, f"Generate {options.name} with ptgen")
        if init_git and not committed:
            progress("note: git is unavailable or failed; the project is not a git repository")
        _move_into_place(staged, target)
    return NewProjectResult(target, files, committed, report)


def _render(
    options: ProjectOptions,
    package: str,
    task: TaskSpec,
    model_kind: str,
    dataset_kind: str,
    staged: Path,
) -> None:
    import copier

    model_name = default_component_name(model_kind)
    dataset_name = default_component_name(dataset_kind)
    ref = resolve_template()
    copier.run_copy(
        ref.src_path,
        staged,
        data={
            "project_name": options.name,
            "package_name": package,
            "description": options.description,
            "author": options.author,
            "task": task.name,
            "modality": task.modality,
            "objective": task.objective,
            "model_name": model_name,
            "dataset_name": dataset_name,
            "amp": options.amp,
            "compile": options.compile,
            "grad_checkpointing": options.grad_checkpointing,
        },
        vcs_ref=ref.vcs_ref,
        defaults=True,
        quiet=True,
    )
    project = ProjectInfo(staged, options.name, package, task.name)
    plan_component(project, "model", model_name, model_kind).apply()
    # Components are black-formatted as they are planned; the Copier template renders
    # black-clean as is (tests/test_template_render.py), so updates never fight formatting.
    plan_component(project, "dataset", dataset_name, dataset_kind, options.variable_length).apply()
    write_defaults(staged, package)  # from the options the template and components declare


def _check_target(target: Path, force: bool) -> None:
    if target.exists() and not target.is_dir():
        raise ConflictError(f"{target} exists and is not a directory")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise ConflictError(f"{target} exists and is not empty; use --force to write into it")


def _writable_parent(output_dir: Path) -> Path:
    """Create output_dir if needed; the scratch directory lives there so the move is a rename."""
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        probe = tempfile.TemporaryDirectory(prefix=".ptgen-probe-", dir=output_dir)
        probe.cleanup()
    except OSError as exc:
        raise PtgenError(f"cannot write to {output_dir}: {exc.strerror or exc}") from exc
    return output_dir


def _move_into_place(staged: Path, target: Path) -> None:
    if not target.exists():
        staged.rename(target)
        return
    # --force into an existing directory: our files replace theirs, other files stay;
    # an existing git repository is kept (ours is dropped).
    if (target / ".git").exists():
        shutil.rmtree(staged / ".git", ignore_errors=True)
    shutil.copytree(staged, target, dirs_exist_ok=True)
