"""`ptgen new project`: Copier copy of the infrastructure, plus the first model and dataset.

Everything is rendered, smoke-tested and committed in a temporary directory
beside the target, then moved into place (a rename): a failed run, a full disk included,
leaves the disk as it was. A lock beside the target (`.ptgen-NAME.lock`, removed at the
end) refuses a second run for the same target while one is under way.
"""

from __future__ import annotations

import contextlib
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ptgen import git
from ptgen.atomic import write_files
from ptgen.components import ProjectInfo, plan_component
from ptgen.defaults import write_defaults
from ptgen.errors import ConflictError, PtgenError
from ptgen.features import DEFAULT_FEATURES, check_features, check_objective
from ptgen.locking import LockHeld, exclusive_lock
from ptgen.options import (
    TaskSpec,
    check_kind,
    check_task,
    component_kinds,
    default_component_name,
    package_name,
)
from ptgen.smoke import SmokeReport, smoke
from ptgen.template_source import reading_cache, resolve_template


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
    features: tuple[str, ...] = DEFAULT_FEATURES  # `ptgen list` shows them; kinds add theirs


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
    """Generate a project into output_dir/NAME (see ProjectOptions); returns what was done.

    All or nothing: a failure (a full disk included) raises a PtgenError and leaves the
    disk as it was. While it runs, a second `new_project` of the same target is refused.
    """
    job = _Job.of(options)
    target = output_dir / options.name
    _check_target(target, force)
    if dry_run:
        with tempfile.TemporaryDirectory(prefix="ptgen-dry-run-") as scratch:
            staged = Path(scratch) / options.name
            progress("rendering the project template")
            _render(job, staged)
            return NewProjectResult(target, _files(staged), False, None)
    created = _make_output_dir(output_dir)
    try:
        with _target_lock(target):
            _check_target(target, force)  # again: no other ptgen can create it from here on
            return _generate(job, target, run_smoke, init_git, progress)
    except BaseException as exc:
        _remove_empty(created)
        if isinstance(exc, OSError):
            raise PtgenError(
                f"cannot create {target}: {_describe(exc)}; nothing was written"
            ) from None
        raise


@dataclass(frozen=True)
class _Job:
    """Validated options: what _render needs."""

    options: ProjectOptions
    package: str
    task: TaskSpec
    model_kind: str
    dataset_kind: str
    features: tuple[str, ...]  # the chosen ones and those the kinds bring or suggest

    @classmethod
    def of(cls, options: ProjectOptions) -> _Job:
        task = check_task(options.task)
        model_kind = options.model or task.default_model
        dataset_kind = options.dataset or task.default_dataset
        kinds = [
            check_kind("model", model_kind, task.name),
            check_kind("dataset", dataset_kind, task.name),
        ]
        brought = [name for kind in kinds for name in (*kind.needs(task.modality), *kind.suggests)]
        features = tuple(check_features([*options.features, *brought]))
        check_objective(features, task.name)
        package = package_name(options.name)
        return cls(options, package, task, model_kind, dataset_kind, features)

    @property
    def model_name(self) -> str:
        return default_component_name(self.model_kind)

    @property
    def dataset_name(self) -> str:
        return default_component_name(self.dataset_kind)

    def answers(self) -> dict[str, object]:
        """The Copier answers (components are named after their kinds)."""
        options = self.options
        return {
            "project_name": options.name,
            "package_name": self.package,
            "description": options.description,
            "author": options.author,
            "task": self.task.name,
            "modality": self.task.modality,
            "objective": self.task.objective,
            "model_name": self.model_name,
            "dataset_name": self.dataset_name,
            "amp": options.amp,
            "compile": options.compile,
            "grad_checkpointing": options.grad_checkpointing,
            "features": list(self.features),
            "train_defaults": dict(component_kinds("model")[self.model_kind].train),
        }


def _generate(
    job: _Job, target: Path, run_smoke: bool, init_git: bool, progress: Callable[[str], None]
) -> NewProjectResult:
    """Render, smoke-test and commit in a scratch directory, then move into place."""
    with _scratch(target) as scratch:
        staged = scratch / target.name
        progress("rendering the project template")
        _render(job, staged)
        files = _files(staged)
        report = None
        if run_smoke:
            progress("smoke-testing: training a few steps")
            report = smoke(staged)
        committed = init_git and _first_commit(staged, target.name, progress)
        _move_into_place(staged, target)
    return NewProjectResult(target, files, committed, report)


def _render(job: _Job, staged: Path) -> None:
    """Copier copy of the infrastructure, the first model and dataset, default.toml."""
    _copy_template(job, staged)
    project = ProjectInfo(staged, job.options.name, job.package, job.task.name, job.features)
    plan_component(project, "model", job.model_name, job.model_kind).apply()
    # Components are black-formatted as they are planned; the Copier template renders
    # black-clean as is (tests/test_template_render.py), so updates never fight formatting.
    variable_length = job.options.variable_length
    plan_component(project, "dataset", job.dataset_name, job.dataset_kind, variable_length).apply()
    write_defaults(staged, job.package)  # from the options the template and components declare


def _copy_template(job: _Job, staged: Path) -> None:
    import copier

    ref = resolve_template()
    with reading_cache(ref):
        copier.run_copy(
            ref.src_path, staged, data=job.answers(), vcs_ref=ref.vcs_ref, defaults=True, quiet=True
        )


def _files(project: Path) -> list[str]:
    return sorted(
        str(p.relative_to(project))
        for p in project.rglob("*")
        if p.is_file() and p.relative_to(project).parts[0] != ".git"
    )


def _check_target(target: Path, force: bool) -> None:
    if target.exists() and not target.is_dir():
        raise ConflictError(f"{target} exists and is not a directory")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise ConflictError(f"{target} exists and is not empty; use --force to write into it")


def _make_output_dir(output_dir: Path) -> list[Path]:
    """Create output_dir if needed; return the directories created, outermost first."""
    missing = [p for p in (output_dir, *output_dir.parents) if not p.exists()][::-1]
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_empty(missing)
        raise PtgenError(f"cannot write to {output_dir}: {exc.strerror or exc}") from None
    return missing


def _remove_empty(directories: list[Path]) -> None:
    """Remove the directories this run created (outermost first in the list), if empty."""
    for directory in reversed(directories):
        with contextlib.suppress(OSError):
            directory.rmdir()


def _lock_path(target: Path) -> Path:
    return target.parent / f".ptgen-{target.name}.lock"


@contextlib.contextmanager
def _target_lock(target: Path) -> Iterator[None]:
    """Refuse a second `new project` of this target while this one runs.

    The lock dies with the process: a killed run never blocks the next one.
    """
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(exclusive_lock(_lock_path(target), wait=False))
        except LockHeld as exc:
            who = f"PID {exc.pid}" if exc.pid else "another process"
            raise ConflictError(
                f"another ptgen ({who}) is creating {target} right now; wait for it to finish"
            ) from None
        except OSError as exc:  # the lock file is the first thing written there
            raise PtgenError(f"cannot write to {target.parent}: {exc.strerror or exc}") from None
        yield


@contextlib.contextmanager
def _scratch(target: Path) -> Iterator[Path]:
    """A temporary directory beside the target, removed at the end whatever happens.

    A run that was killed leaves its scratch directory: the next run of the same target
    (it holds the lock, so no other run is using it) removes it.
    """
    prefix = f".ptgen-{target.name}.tmp-"
    for stale in target.parent.glob(prefix + "*"):
        shutil.rmtree(stale, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=prefix, dir=target.parent) as scratch:
        yield Path(scratch)


def _first_commit(staged: Path, name: str, progress: Callable[[str], None]) -> bool:
    """Commit the new project; without git, say so and go on (the project is complete)."""
    try:
        committed = git.init_and_commit(staged, f"Generate {name} with ptgen")
    except git.GitError as exc:  # a full disk, say: the whole generation fails
        raise git.GitError(f"cannot make the first commit ({exc}); nothing was written") from None
    if not committed:
        progress("note: git is not installed; the project is not a git repository")
    return committed


def _move_into_place(staged: Path, target: Path) -> None:
    if not target.exists():
        staged.rename(target)
        return
    # --force into an existing directory: our files replace theirs, other files stay;
    # an existing git repository is kept (ours is dropped). All files or none.
    keep_their_git = (target / ".git").exists()
    files: dict[Path, bytes] = {}
    modes: dict[Path, int] = {}
    dirs = []
    for path in sorted(staged.rglob("*")):
        rel = path.relative_to(staged)
        if keep_their_git and rel.parts[0] == ".git":
            continue
        if path.is_dir():
            dirs.append(target / rel)
        else:
            files[target / rel] = path.read_bytes()
            modes[target / rel] = stat.S_IMODE(path.stat().st_mode)
    write_files(files, modes, dirs)


def _describe(exc: OSError) -> str:
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"
