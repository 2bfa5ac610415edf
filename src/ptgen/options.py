"""The option model: tasks, component kinds, which fit together, and valid names.

One source of truth for the CLI, the renderers and `ptgen list`.
"""

from __future__ import annotations

import keyword
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ptgen.errors import InvalidName, PtgenError
from ptgen.paths import templates_dir
from ptgen.template_meta import read_yaml, template_question


@dataclass(frozen=True)
class TaskSpec:
    """A task: templates/project/_tasks/<name>/ (task.yml, synthetic.py for Copier)."""

    name: str
    summary: str
    modality: str
    objective: str
    default_model: str
    default_dataset: str


def tasks() -> dict[str, TaskSpec]:
    """Every task of the project template, read from its task.yml."""
    found = {}
    modalities, objectives = template_question("modality_names"), template_question(
        "objective_names"
    )
    for meta in sorted((templates_dir() / "project" / "_tasks").glob("*/task.yml")):
        spec = TaskSpec(meta.parent.name, **read_yaml(meta))
        if spec.modality not in modalities or spec.objective not in objectives:
            raise PtgenError(
                f"{meta}: unknown modality {spec.modality!r} or objective {spec.objective!r}"
            )
        found[spec.name] = spec
    return found


def check_task(name: str) -> TaskSpec:
    """The task called `name`; otherwise a message listing the tasks there are."""
    if name not in tasks():
        raise PtgenError(f"unknown task {name!r}; tasks: {', '.join(tasks())}")
    return tasks()[name]


@dataclass(frozen=True)
class ComponentKind:
    """A model or dataset template: templates/<group>/<name>/."""

    group: str  # "model" | "dataset"
    name: str
    summary: str
    tasks: tuple[str, ...]
    features: tuple[str, ...] = ()  # features its module needs (e.g. streams for *-shards)
    suggests: tuple[str, ...] = ()  # choosable features it makes useful (predict): on by default
    # [train] defaults a project whose first model is of this kind starts from (a model kind's)
    train: tuple[tuple[str, object], ...] = ()
    # features its module needs in projects of one modality only (hf-datasets: augment for images)
    modality_features: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def needs(self, modality: str) -> tuple[str, ...]:
        """The features its module needs in a project of `modality`."""
        return (*self.features, *dict(self.modality_features).get(modality, ()))

    @property
    def directory(self) -> Path:
        return templates_dir() / self.group / self.name


def component_kinds(group: str) -> dict[str, ComponentKind]:
    """Every kind in templates/<group>/, read from its meta.yml."""
    kinds = {}
    for meta in sorted((templates_dir() / group).glob("*/meta.yml")):
        data = read_yaml(meta)
        name = meta.parent.name
        kinds[name] = ComponentKind(
            group,
            name,
            data["summary"],
            tuple(data["tasks"]),
            tuple(data.get("features", ())),
            tuple(data.get("suggests", ())),
            tuple((data.get("train") or {}).items()),
            tuple((k, tuple(v)) for k, v in (data.get("modality_features") or {}).items()),
        )
    return kinds


def kinds_for_task(group: str, task: str) -> list[str]:
    return [k.name for k in component_kinds(group).values() if task in k.tasks]


def default_kind(group: str, task: str) -> str:
    spec = check_task(task)
    return spec.default_model if group == "model" else spec.default_dataset


def default_component_name(kind: str) -> str:
    """The module name a component of a kind gets by default: image-folder -> image_folder."""
    return kind.replace("-", "_")


def check_kind(group: str, kind: str, task: str) -> ComponentKind:
    """The kind, if it exists and fits the task; otherwise a message listing the ones that do."""
    kinds = component_kinds(group)
    fitting = ", ".join(kinds_for_task(group, task)) or "none"
    if kind not in kinds:
        raise PtgenError(f"unknown {group} kind {kind!r}; kinds for {task}: {fitting}")
    if task not in kinds[kind].tasks:
        raise PtgenError(
            f"{group} kind {kind!r} does not fit a {task} project; use one of: {fitting}"
        )
    return kinds[kind]


_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
MAX_NAME_LENGTH = 64
# Names that would shadow what a generated project imports.
_SHADOWED = {"torch", "numpy", "tqdm", "PIL", "pillow", "ptgen", "copier", "pytest", "tests", "src"}


def package_name(project_name: str) -> str:
    """Validate a project name and derive its package: `my-proj` -> `my_proj`."""
    if not project_name or not project_name.strip():
        raise InvalidName("project name is empty")
    if len(project_name) > MAX_NAME_LENGTH:
        raise InvalidName(f"project name is longer than {MAX_NAME_LENGTH} characters")
    if not _NAME.match(project_name):
        raise InvalidName(
            f"invalid project name {project_name!r}: "
            "use letters, digits, '-' and '_', starting with a letter"
        )
    package = project_name.lower().replace("-", "_")
    _check_identifier(package, "project name")
    return package


def component_name(name: str) -> str:
    """Validate a model/dataset name: a lower-case Python module name."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name or ""):
        raise InvalidName(
            f"invalid component name {name!r}: "
            "use lower-case letters, digits and '_', starting with a letter"
        )
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidName(f"component name is longer than {MAX_NAME_LENGTH} characters")
    # A component is a submodule (PKG.data.csv), so it cannot shadow a top-level module.
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise InvalidName(f"component name {name!r} is a Python keyword")
    return name


def _check_identifier(name: str, what: str) -> None:
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise InvalidName(f"{what} {name!r} is a Python keyword")
    if name in sys.stdlib_module_names or name in _SHADOWED:
        raise InvalidName(f"{what} {name!r} would shadow the module {name!r}; choose another name")
