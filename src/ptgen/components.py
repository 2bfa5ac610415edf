"""`ptgen add model|dataset`: render one component (module + its test) into a project.

`ptgen new project` writes its first model and dataset through this same code, so a
component written at `new` time is byte-identical to one added later. Components are
discovered by the project at run time (a module in models/ or data/), so adding one
never edits a file the user may have changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jinja2
import yaml

from ptgen.answers import ANSWERS_FILE, read_answers
from ptgen.errors import NotAProject, PtgenError
from ptgen.options import (
    check_kind,
    check_task,
    component_kinds,
    component_name,
    default_kind,
    tasks,
)
from ptgen.paths import templates_dir
from ptgen.plan import FilePlan
from ptgen.render import format_python, render_file

GROUP_DIRS = {"model": "models", "dataset": "data"}


@dataclass(frozen=True)
class ProjectInfo:
    root: Path
    project_name: str
    package: str
    task: str
    features: tuple[str, ...] = ()  # the project's (`features` in its answers)


def read_project(project_dir: Path) -> ProjectInfo:
    """What ptgen needs to know about a generated project, from its Copier answers."""
    from ptgen.features import recorded_features

    answers = read_answers(project_dir, ("project_name", "package_name", "task"))
    name, package, task = (str(answers[key]) for key in ("project_name", "package_name", "task"))
    info = ProjectInfo(project_dir, name, package, task, tuple(recorded_features(answers)))
    if not (project_dir / "src" / info.package).is_dir():
        raise NotAProject(f"{project_dir} has no src/{info.package} package")
    return info


def plan_component(
    project: ProjectInfo,
    group: str,
    name: str,
    kind: str | None = None,
    variable_length: bool | None = None,
) -> FilePlan:
    """The files of one component: its module and its test, black-formatted.

    `variable_length` (sequence datasets only; default True): pad each batch to its own
    longest sequence, or (False) pad every sequence to data.max_length in the dataset.
    """
    name = component_name(name)
    task = check_task(project.task)
    kind = kind or default_kind(group, task.name)
    spec = check_kind(group, kind, task.name)
    if variable_length is not None and (group != "dataset" or task.modality != "sequence"):
        flag = "--variable-length" if variable_length else "--fixed-length"
        sequence_tasks = [t.name for t in tasks().values() if t.modality == "sequence"]
        raise PtgenError(
            f"{flag} applies to datasets of token sequences ({', '.join(sequence_tasks)} "
            f"projects); this is a {group} of a {task.name} project"
        )
    context = {
        "project_name": project.project_name,
        "package_name": project.package,
        "task": task.name,
        "modality": task.modality,
        "objective": task.objective,
        "variable_length": variable_length is not False,
        "name": name,
        "kind": kind,
        "features": [*project.features, *spec.needs(task.modality)],
    }
    module = f"src/{project.package}/{GROUP_DIRS[group]}/{name}.py"
    test = f"tests/test_{'model' if group == 'model' else 'data'}_{name}.py"
    plan = FilePlan(project.root)
    plan.add(
        module, format_python(render_file(spec.directory / f"{group}.py.jinja", context), module)
    )
    test_template = templates_dir() / group / f"test_{group}.py.jinja"
    plan.add(test, format_python(render_file(test_template, context), test))
    return plan


def add_component(
    project_dir: Path,
    group: str,
    name: str,
    kind: str | None = None,
    variable_length: bool | None = None,
    force: bool = False,
    dry_run: bool = False,
) -> FilePlan:
    """Plan, check for conflicts, and (unless dry_run) write one component, with the
    helper modules its kind brings when the project lacks them (data/_inputs.py for the
    kinds that read files, data/_augment.py for image-folder), recorded in the answers.
    A helper with lines in shared files (the shard kinds' streaming) is merged in first,
    as `ptgen add feature` does: that needs a clean git tree."""
    from ptgen.features import change_features, features

    project = read_project(project_dir)
    plan = plan_component(project, group, name, kind, variable_length)
    helpers = _missing_helpers(project, group, kind or default_kind(group, project.task))
    merged = [name for name in helpers if features()[name].shared_lines]
    helpers = [name for name in helpers if name not in merged]
    brought = helper_files(project, [*helpers, *merged])
    for rel, content in brought.items():
        if not (project_dir / rel).exists():  # e.g. data/_inputs.py, which predict renders too
            plan.add(rel, content)
    if not dry_run:
        plan.check_conflicts(force)
        if merged:
            change = change_features(project_dir, add=merged)
            if change.needs_action:
                raise PtgenError("\n".join(change.lines()))
            project = read_project(project_dir)
            plan.files = {
                rel: text
                for rel, text in plan.files.items()
                if rel not in brought or not (project_dir / rel).exists()
            }  # the merge wrote them
        plan.apply()
        if helpers:
            record_features(project_dir, [*project.features, *helpers])
    return plan


def _missing_helpers(project: ProjectInfo, group: str, kind: str) -> list[str]:
    needed = component_kinds(group)[kind].needs(check_task(project.task).modality)
    return [n for n in needed if n not in project.features]


def missing_suggestions(project_dir: Path, group: str, kind: str | None = None) -> list[str]:
    """The features a kind suggests (`predict` for data read from files) that the project
    lacks: a new project gets them; `ptgen add` names them, as they change shared files."""
    project = read_project(project_dir)
    spec = component_kinds(group)[kind or default_kind(group, project.task)]
    return [name for name in spec.suggests if name not in project.features]


def helper_files(project: ProjectInfo, names: list[str]) -> dict[str, str]:
    """The files of features `names` (their feature.yml `files`) as the project template
    renders them for this project: {relative path: content}."""
    from ptgen.features import features

    template = templates_dir() / "project"
    answers = read_answers(project.root)
    context = {**answers, "features": [*project.features, *names]}
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(template),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["from_yaml"] = yaml.safe_load  # as Copier's environment has it (_lib/parts.jinja)
    files = {}
    for name in names:
        for rel in features()[name].files:
            target = env.from_string(rel).render(context)
            source = template / rel
            if source.is_file():
                files[target] = source.read_text(encoding="utf-8")
            elif source.with_name(source.name + ".jinja").is_file():
                files[target] = env.get_template(rel + ".jinja").render(context)
    return files


def record_features(project_dir: Path, names: list[str]) -> None:
    """Set `features` in .copier-answers.yml, in the block style Copier writes."""
    path = project_dir / ANSWERS_FILE
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("features:")), None)
    block = ["features:", *(f"- {name}" for name in sorted(set(names)))]
    if start is None:
        lines += block
    else:
        end = start + 1
        while end < len(lines) and lines[end].startswith("- "):
            end += 1
        lines[start:end] = block
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
