"""Features: capabilities a project chooses, adds and removes (`--with`, `ptgen add feature`).

A feature is a folder of the project template's `_features/` with a `feature.yml`
(`summary`, `files`: what it brings, left out of a project without it; optional `extra`:
the project's pip extra it needs; `kinds_only`: brought by component kinds, not chosen by
hand), registered by its name in copier.yml's `feature_names`. What it adds to the core's
files are the parts in its folder, so a project without it holds no trace of it. The
chosen list is the Copier answer `features`.

Adding or removing one re-renders the template at the project's own version with the new
list and merges the difference into the project (Copier's update from the recorded commit
to the same commit), so user edits survive and conflicts are listed as `ptgen update` lists them.
The merge runs in a clone and is applied all or nothing, one change at a time per project;
a change a killed process left half applied is found by the next one (ptgen.journal).

Library use::

    from ptgen.features import change_features

    report = change_features(Path("my-project"), add=["sweep"], dry_run=True)
    print("\\n".join(report.lines()))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ptgen.errors import PtgenError
from ptgen.paths import templates_dir
from ptgen.template_meta import read_yaml, template_question

if TYPE_CHECKING:
    from ptgen.update import UpdateReport  # imports Copier's helpers: not at start-up

# What `ptgen new project` picks when --with is not given: none but what the kinds suggest
# (predict, for data read from files). A first week is train, evaluate and resume, all in
# the core; each feature is one command away.
DEFAULT_FEATURES: tuple[str, ...] = ()
# Every project made before template 0.3.0 had all of these (copier.yml's default too).
LEGACY_FEATURES = (
    "augment",
    "experiments",
    "export",
    "finetune",
    "fsdp",
    "imbalance",
    "inputs",
    "mlflow",
    "optim",
    "plot",
    "predict",
    "profiler",
    "streams",
    "sweep",
    "tensorboard",
)


@dataclass(frozen=True)
class FeatureSpec:
    """A feature: templates/project/_features/<name>/feature.yml."""

    name: str
    summary: str
    extra: str | None = None  # the generated project's pip extra, e.g. sweep
    kinds_only: bool = False  # brought by component kinds (e.g. streams), not by --with
    objectives: tuple[str, ...] = ()  # the task objectives it serves (empty: every one)
    shared_lines: bool = False  # kinds_only, yet with lines in shared files (streams)
    files: tuple[str, ...] = ()  # what it brings, as in the template: `src/{{package_name}}/x.py`
    needs: tuple[str, ...] = ()  # features whose files it uses too (predict: inputs')


def features() -> dict[str, FeatureSpec]:
    """Every feature copier.yml registers (`feature_names`), read from its feature.yml."""
    found = {}
    for name in sorted(template_question("feature_names")):
        data = read_yaml(templates_dir() / "project" / "_features" / name / "feature.yml")
        data["objectives"] = tuple(data.get("objectives", ()))
        data["files"] = tuple(data.get("files", ()))
        data["needs"] = tuple(data.get("needs", ()))
        found[name] = FeatureSpec(name, **data)
    return found


def parse_features(text: str | None) -> list[str]:
    """`--with sweep,export` as a checked list; an unknown name lists the known ones."""
    names = [part.strip() for part in (text or "").split(",") if part.strip()]
    return check_features(names)


def check_features(names: Iterable[str]) -> list[str]:
    """The names, sorted and without repeats, if every one is a feature."""
    known = features()
    unknown = [name for name in names if name not in known]
    if unknown:
        choosable = ", ".join(n for n, spec in known.items() if not spec.kinds_only)
        raise PtgenError(f"unknown feature {unknown[0]!r}; features: {choosable}")
    return sorted(set(names))


def serves(name: str, task: str) -> bool:
    """Whether feature `name` serves `task` (imbalance is for classification only)."""
    from ptgen.options import tasks

    objectives, spec = features()[name].objectives, tasks().get(task)
    return not objectives or spec is None or spec.objective in objectives


def check_objective(names: Iterable[str], task: str) -> None:
    """Refuse a feature that does not serve this task."""
    for name in names:
        if not serves(name, task):
            kinds = " or ".join(features()[name].objectives)
            raise PtgenError(f"feature {name!r} serves {kinds} tasks; this project learns {task}")


def recorded_features(answers: dict[str, object]) -> list[str]:
    """A project's features from its answers (a project before 0.3.0: every feature that
    serves its task, as copier.yml's default gives it)."""
    value = answers.get("features")
    if value is None:
        value = [name for name in LEGACY_FEATURES if serves(name, str(answers.get("task")))]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PtgenError(f"`features` in .copier-answers.yml is not a list of names: {value!r}")
    known = features()
    unknown = [name for name in value if name not in known]
    if unknown:
        raise PtgenError(
            f"`features` in .copier-answers.yml names an unknown feature {unknown[0]!r} "
            f"(features: {', '.join(known)}): correct or delete it there and commit"
        )
    return sorted(value)


def change_features(
    project_dir: Path,
    add: Iterable[str] = (),
    remove: Iterable[str] = (),
    dry_run: bool = False,
) -> FeatureChange:
    """Add and remove features of the project at `project_dir`; see the module doc."""
    from ptgen.answers import read_answers
    from ptgen.journal import changing
    from ptgen.update import reanswer

    add, remove = check_features(add), check_features(remove)
    project_dir = project_dir.resolve()
    read_answers(project_dir, ("_commit", "_src_path", "task"))  # a project, before locking it
    with changing(project_dir, _command(add, remove), write=not dry_run):
        answers = read_answers(project_dir, ("_commit", "_src_path", "task"))
        check_objective(add, str(answers["task"]))
        current = recorded_features(answers)
        _check_change(current, add, remove)
        wanted = sorted((set(current) | set(add)) - set(remove))
        report = reanswer(project_dir, {"features": wanted}, dry_run) if wanted != current else None
    return FeatureChange(project_dir, tuple(current), tuple(wanted), dry_run, report)


def _command(add: list[str], remove: list[str]) -> str:
    """The command line that makes this change, for the journal's message."""
    parts = [f"ptgen add feature {','.join(add)}"] if add else []
    parts += [f"ptgen remove feature {','.join(remove)}"] if remove else []
    return " && ".join(parts) or "ptgen add feature"


def _check_change(current: list[str], add: list[str], remove: list[str]) -> None:
    both = set(add) & set(remove)
    if both:
        raise PtgenError(f"feature {sorted(both)[0]!r} cannot be both added and removed")
    known = features()
    brought = [name for name in remove if known[name].kinds_only and name in current]
    if brought:
        raise PtgenError(
            f"feature {brought[0]!r} is brought by dataset kinds and used by their modules; "
            "it stays while the project has such a dataset"
        )


@dataclass(frozen=True)
class FeatureChange:
    """What adding/removing features did (or, with dry_run, would do)."""

    project: Path
    before: tuple[str, ...]
    after: tuple[str, ...]
    dry_run: bool
    report: UpdateReport | None  # None when nothing changes

    @property
    def needs_action(self) -> bool:
        return bool(self.report is not None and self.report.needs_action)

    def lines(self) -> list[str]:
        if self.report is None:
            shown = ", ".join(self.after) or "none"
            return [f"{self.project.name}: nothing to change (features: {shown})"]
        added = sorted(set(self.after) - set(self.before))
        removed = sorted(set(self.before) - set(self.after))
        verb = "Would change" if self.dry_run else "Changed"
        change = ", ".join([*(f"+{n}" for n in added), *(f"-{n}" for n in removed)])
        rows = self.report.lines()[1:]  # the file list and advice of the update
        known = features()
        extras = [known[n].extra for n in added if known[n].extra]
        hint = [f"Install what it needs: pip install -e '.[{','.join(extras)}]'"] if extras else []
        if self.report.stale_settings and removed:
            back = " or ".join(f"`ptgen add feature {name}`" for name in removed)
            hint.append(f"Those settings belonged to what was removed; {back} brings them back.")
        return [f"{verb} the features of {self.project.name}: {change}", *rows, *hint]
