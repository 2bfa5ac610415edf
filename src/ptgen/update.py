"""`ptgen update`: bring template improvements into an existing project, keeping user edits.

The update is Copier's (`copier.run_update`, a three-way merge of the old template, the
new template and the project); ptgen adds what Copier leaves to the caller: it makes sure
the template cache holds the target version, refuses a dirty working tree up front, and
afterwards finds every conflict Copier left (unmerged files, `.rej` files, conflict
markers) instead of exiting 0 over them. Models and datasets written by `ptgen add` are
not part of the template, so Copier never touches them.

Library use::

    from ptgen.update import update_project

    report = update_project(Path("my-project"), to_version=None, dry_run=True)
    print("\\n".join(report.lines()))
    if report.conflicts:
        ...
"""

from __future__ import annotations

import re
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ptgen._toml import tomllib
from ptgen.answers import ANSWERS_FILE, read_answers
from ptgen.atomic import write_files
from ptgen.defaults import DEFAULTS_FILE, write_defaults
from ptgen.errors import NotAProject, PtgenError
from ptgen.git import git, git_ok, last_line
from ptgen.options import tasks
from ptgen.template_source import TemplateRef, reading_cache, resolve_template

# Template releases whose infrastructure changed the API that components (models/, data/)
# are written against: an update across one lists every component as needing an upgrade.
COMPONENT_API_RELEASES = ("0.2.0",)
_REF = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./+-]*")  # a tag, hash or describe output
_UNMERGED = {"DD", "AU", "UD", "UA", "DU", "AA", "UU"}
_MARKERS = ("<<<<<<< ", ">>>>>>> ")


class DirtyProject(PtgenError):
    """The project has uncommitted changes; an update needs a clean git working tree."""


class UpdateFailed(PtgenError):
    """Copier could not update the project."""


@dataclass(frozen=True)
class UpdateReport:
    """What an update changed (or, with dry_run, would change) in a project."""

    project: Path
    from_version: str
    to_version: str
    dry_run: bool = False
    changed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    upgrade: tuple[str, ...] = ()  # components written against an older component API
    kept: tuple[str, ...] = ()  # files the change removes that hold the user's edits (conflicts)
    # (user config file, keys it sets that configs/default.toml no longer has)
    stale_settings: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def up_to_date(self) -> bool:
        return not (self.changed or self.added or self.removed or self.conflicts)

    @property
    def needs_action(self) -> bool:
        """Conflicts to resolve or components to upgrade: `ptgen update` exits 1."""
        return bool(self.conflicts or self.upgrade)

    def lines(self) -> list[str]:
        """A human summary: one line per file, then what to do next."""
        verb = "Would update" if self.dry_run else "Updated"
        head = f"{verb} {self.project.name}: template {self.from_version} -> {self.to_version}"
        if self.up_to_date:
            return [f"{self.project.name} is up to date (template {self.to_version})"]
        rows = [f"  {kind:<9}{path}" for kind, paths in self._groups() for path in paths]
        return [head, *rows, *self._advice()]

    def _groups(self) -> list[tuple[str, tuple[str, ...]]]:
        return [
            ("conflict", self.conflicts),
            ("changed", self.changed),
            ("added", self.added),
            ("removed", self.removed),
            ("upgrade", self.upgrade),
        ]

    def _advice(self) -> list[str]:
        upgrade = (
            [
                f"{len(self.upgrade)} component(s) were written for the template before "
                f"{self.to_version}'s component API: upgrade them as CHANGELOG.md says "
                "(ptgen add ... --force, then carry your edits over)."
            ]
            if self.upgrade
            else []
        )
        settings = [
            f"{path} still sets {', '.join(keys)}, which the project no longer reads: "
            "delete {} there.".format("it" if len(keys) == 1 else "them")
            for path, keys in self.stale_settings
        ]
        if self.dry_run:
            clash = f" {len(self.conflicts)} file(s) would conflict." if self.conflicts else ""
            return ["Dry run: nothing was changed." + clash, *settings, *upgrade]
        merged = [path for path in self.conflicts if path not in self.kept]
        todo = []
        if merged:
            todo.append(
                f"{len(merged)} conflict(s): resolve the <<<<<<< markers, apply and "
                "delete the .rej files, then `git add` and commit."
            )
        if self.kept:
            todo.append(
                f"{len(self.kept)} file(s) to remove hold your own edits and were kept "
                f"({', '.join(self.kept)}): move what you need elsewhere, then `git rm` them."
            )
        return [*(todo or ["Review with `git diff`, then commit."]), *settings, *upgrade]


def update_project(
    project_dir: Path, to_version: str | None = None, dry_run: bool = False
) -> UpdateReport:
    """Update `project_dir` to template `to_version` (default: newest); see the module doc."""
    project_dir = project_dir.resolve()
    answers, ref = _checked_project(project_dir, to_version)
    recorded = str(answers["_commit"])
    versions = (project_dir, recorded.removeprefix("v"), ref.version, dry_run)
    if _recorded_commit(ref, recorded) == _commit_of(ref, ref.vcs_ref):
        return UpdateReport(*versions)
    upgrade = _components_to_upgrade(project_dir, answers, versions[1], ref.version)
    data = _task_answers(answers)
    return UpdateReport(
        *versions, **_run_in(project_dir, ref.vcs_ref, data, dry_run), upgrade=upgrade
    )


def reanswer(project_dir: Path, data: dict[str, Any], dry_run: bool = False) -> UpdateReport:
    """Re-render the project's own template version with some answers changed (`data`,
    e.g. its features) and merge the difference into it, as an update does.

    The merge runs in a throwaway clone of the project; its result is then written into
    the project all or nothing, so a failure part-way leaves the project as it was. A file
    the change removes that differs from what the template rendered for it (the user
    edited it) is kept and listed as a conflict; the user's configs that still set keys
    the change took out of configs/default.toml are listed too."""
    project_dir = project_dir.resolve()
    answers, ref = _checked_project(project_dir)
    recorded = str(answers["_commit"])
    commit = _recorded_commit(ref, recorded)  # the cache must hold the project's version
    version = recorded.removeprefix("v")
    with tempfile.TemporaryDirectory(prefix="ptgen-update-") as tmp:
        clone = _clone_project(project_dir, Path(tmp))
        changes = _run_update(clone, recorded, {**_task_answers(answers), **data})
        kept = _edited_removals(project_dir, ref, commit, answers, changes["removed"])
        changes["removed"] = tuple(p for p in changes["removed"] if p not in kept)
        changes["conflicts"] = tuple(sorted({*changes["conflicts"], *kept}))
        stale = _stale_settings(project_dir, clone)
        if not dry_run:
            _apply_clone(clone, project_dir, changes, kept)
    return UpdateReport(
        project_dir, version, version, dry_run, **changes, kept=kept, stale_settings=stale
    )


def _edited_removals(
    project_dir: Path, ref: TemplateRef, commit: str, answers: dict[str, Any], removed: tuple
) -> tuple[str, ...]:
    """The files among `removed` that the user changed: those that differ from what the
    template rendered for them at the project's version with its recorded answers."""
    if not removed:
        return ()
    import copier

    data = {k: v for k, v in answers.items() if not k.startswith("_")}
    data.update(_task_answers(answers))
    with tempfile.TemporaryDirectory(prefix="ptgen-rendered-") as tmp, reading_cache(ref):
        copier.run_copy(
            ref.src_path, tmp, data=data, vcs_ref=commit, defaults=True, unsafe=True, quiet=True
        )
        return tuple(rel for rel in removed if _edited(project_dir / rel, Path(tmp) / rel))


def _edited(mine: Path, rendered: Path) -> bool:
    """Whether `mine` holds more than the template rendered (black-formatted, for Python);
    a file the template did not render is the user's own."""
    if not rendered.is_file():
        return True
    text, ours = mine.read_bytes(), rendered.read_bytes()
    if text == ours:
        return False
    if mine.suffix != ".py":
        return True
    from ptgen.render import format_python

    try:
        return text.decode("utf-8") != format_python(ours.decode("utf-8"), str(rendered))
    except (UnicodeDecodeError, RuntimeError):
        return True


def _stale_settings(project_dir: Path, clone: Path) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The user's configs (configs/**/*.toml) that set keys which the change took out of
    configs/default.toml: a run with them would fail on an unknown key."""
    gone = _keys(project_dir / DEFAULTS_FILE) - _keys(clone / DEFAULTS_FILE)
    found = []
    for path in sorted((project_dir / "configs").rglob("*.toml")) if gone else ():
        rel = path.relative_to(project_dir).as_posix()
        hits = tuple(sorted(_keys(path) & gone)) if rel != DEFAULTS_FILE else ()
        if hits:
            found.append((rel, hits))
    return tuple(found)


def _keys(path: Path) -> set[str]:
    """The dotted keys a TOML config sets (none when it cannot be read)."""
    try:
        return set(_dotted(tomllib.loads(path.read_text(encoding="utf-8"))))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return set()


def _dotted(table: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in table.items():
        if isinstance(value, dict):
            yield from _dotted(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"


def _apply_clone(
    clone: Path, project_dir: Path, changes: dict[str, tuple[str, ...]], kept: tuple[str, ...]
) -> None:
    """Write what the merge changed in `clone` into the project, all or nothing."""
    paths = {
        path for group in ("conflicts", "changed", "added", "removed") for path in changes[group]
    }
    clobbered = [path for path in changes["added"] if (project_dir / path).exists()]
    if clobbered:  # the tree was clean: a file git ignores
        raise UpdateFailed(
            f"{project_dir / clobbered[0]} exists (git ignores it) and the change would "
            "write over it: move it away, then run this again"
        )
    files: dict[Path, bytes] = {}
    modes: dict[Path, int] = {}
    remove = []
    for path in sorted(paths):
        source, dest = clone / path, project_dir / path
        if source.is_file():
            files[dest] = source.read_bytes()
            if not dest.exists():  # a file the user has keeps its mode
                modes[dest] = stat.S_IMODE(source.stat().st_mode)
        elif dest.is_file() and path not in kept:
            remove.append(dest)
    write_files(files, modes, remove=remove)


def _checked_project(
    project_dir: Path, version: str | None = None
) -> tuple[dict[str, Any], TemplateRef]:
    """The project's answers and the template at `version`, once the project is a clean
    git tree made from ptgen's template cache; otherwise the error that says why not."""
    answers = read_answers(project_dir, ("_commit", "_src_path"))
    require_clean_repo(project_dir)
    ref = resolve_template(version)
    _require_same_source(str(answers["_src_path"]), ref)
    return answers, ref


def _task_answers(answers: dict[str, Any]) -> dict[str, Any]:
    """The answers ptgen derives from the task (older projects lack them)."""
    task = tasks().get(str(answers.get("task", "")))  # None: a template without ptgen's tasks
    return {"modality": task.modality, "objective": task.objective} if task else {}


def _run_in(
    project_dir: Path, vcs_ref: str | None, data: dict[str, Any], dry_run: bool
) -> dict[str, tuple[str, ...]]:
    """Copier's update in the project, or with dry_run in a throwaway clone of it."""
    if not dry_run:
        return _run_update(project_dir, vcs_ref, data)
    with tempfile.TemporaryDirectory(prefix="ptgen-update-") as tmp:
        return _run_update(_clone_project(project_dir, Path(tmp)), vcs_ref, data)


def require_clean_repo(project_dir: Path) -> None:
    """Refuse a project outside git or with uncommitted changes (Copier would too, later)."""
    if not git_ok(project_dir, "rev-parse", "--is-inside-work-tree"):
        raise NotAProject(f"{project_dir} is not in a git repository; `git init` and commit first")
    dirty = git(project_dir, "status", "--porcelain", "--untracked-files=all").splitlines()
    if dirty:
        shown = ", ".join(line[3:] for line in dirty[:3]) + (", ..." if len(dirty) > 3 else "")
        raise DirtyProject(
            f"{project_dir} has uncommitted changes ({shown}): commit or stash them first, "
            "so the update can be reviewed and undone with git"
        )


def _require_same_source(recorded: str, ref: TemplateRef) -> None:
    if Path(recorded).expanduser() != Path(ref.src_path).expanduser():
        raise UpdateFailed(
            f"the project's template source is {recorded}, but ptgen's template "
            f"cache is {ref.src_path}; set PTGEN_CACHE_DIR to the recorded cache's parent"
        )


def _recorded_commit(ref: TemplateRef, recorded: str) -> str:
    """The template commit the project records; UpdateFailed when the cache lacks it."""
    commit = _commit_of(ref, recorded) if _REF.fullmatch(recorded) else ""
    if not commit and "+g" in recorded:  # a development tag another cache named otherwise
        commit = _commit_of(ref, recorded.rpartition("+g")[2])
    if not commit:
        raise UpdateFailed(
            f"the project records template version {recorded!r} (_commit in {ANSWERS_FILE}), "
            f"which ptgen's template cache {ref.src_path} does not hold: update it with the "
            "ptgen that generated it, or set _commit to the released version it came from "
            "(vX.Y.Z) and commit"
        )
    return commit


def _commit_of(ref: TemplateRef, name: str | None) -> str:
    """The full hash `name` resolves to in the template cache; '' when it resolves to none."""
    cache = Path(ref.src_path).expanduser()
    return git(cache, "rev-parse", "-q", "--verify", f"{name}^{{commit}}", check=False).strip()


def _clone_project(project_dir: Path, tmp: Path) -> Path:
    """A throwaway clone of the project's HEAD, at the same place inside its repository."""
    top = Path(git(project_dir, "rev-parse", "--show-toplevel").strip()).resolve()
    git(tmp, "clone", "-q", "--no-hardlinks", str(top), "clone")
    return tmp / "clone" / project_dir.relative_to(top)


def _run_update(
    project_dir: Path, vcs_ref: str | None, data: dict[str, Any]
) -> dict[str, tuple[str, ...]]:
    """Run Copier's update, rewrite configs/default.toml from the updated option
    dataclasses, then sort what changed into the report's file lists."""
    import copier
    from copier.errors import CopierError
    from plumbum import ProcessExecutionError  # comes with Copier

    try:
        copier.run_update(
            project_dir,
            data=data,
            vcs_ref=vcs_ref,
            overwrite=True,
            defaults=True,
            skip_answered=False,  # answers a migration changed (keep_features.py) are read
            unsafe=True,
            quiet=True,
            conflict="inline",
        )
    except CopierError as exc:
        raise UpdateFailed(f"copier update failed: {exc}") from None
    except ProcessExecutionError as exc:  # a git command Copier ran
        raise UpdateFailed(f"copier update failed: git: {last_line(exc.stderr)}") from None
    _refresh_defaults(project_dir)
    return _classify(_status(project_dir), project_dir)


def _refresh_defaults(project_dir: Path) -> None:
    """configs/default.toml follows the dataclasses; left as it is where they cannot be
    read statically (components still to upgrade, or a computed default)."""
    package = str(read_answers(project_dir).get("package_name", ""))
    try:
        write_defaults(project_dir, package)
    except (PtgenError, OSError, SyntaxError):
        pass  # the project's own test names the command that rewrites it


def _components_to_upgrade(
    project_dir: Path, answers: dict[str, Any], from_version: str, to_version: str
) -> tuple[str, ...]:
    """Every component module, when the update crosses a change of the component API.

    A development version (`0.2.0-3-gabc1234`, or a bare hash) is the template on disk,
    newer than every release; a project records the release its version starts from."""
    from packaging.version import InvalidVersion, Version

    def release(text: str) -> Version | None:
        try:
            return Version(text.split("-")[0])
        except InvalidVersion:
            return None

    old, new = release(from_version), release(to_version)
    newest = new is None or "-" in to_version
    crossed = any(
        (old is None or old < Version(api)) and (newest or Version(api) <= new)
        for api in COMPONENT_API_RELEASES
    )
    if not crossed:
        return ()
    package = project_dir / "src" / str(answers.get("package_name", ""))
    return tuple(
        str(path.relative_to(project_dir))
        for folder in ("models", "data")
        for path in sorted((package / folder).glob("*.py"))
        if not path.name.startswith("_")
    )


def _classify(status: dict[str, str], project_dir: Path) -> dict[str, tuple[str, ...]]:
    """Split `git status` (path -> XY code) into conflicts, changed, added and removed."""
    conflicts = {p for p, code in status.items() if code in _UNMERGED or p.endswith(".rej")}
    conflicts |= set(_files_with_markers(project_dir, status))
    added = tuple(p for p, code in status.items() if code in ("??", "A ") and p not in conflicts)
    removed = tuple(p for p, code in status.items() if "D" in code and p not in conflicts)
    changed = tuple(p for p in status if p not in conflicts.union(added, removed))
    return {
        "conflicts": tuple(sorted(conflicts)),
        "changed": changed,
        "added": added,
        "removed": removed,
    }


def _status(project_dir: Path) -> dict[str, str]:
    """`git status` as {path relative to the project: XY code}."""
    out = git(project_dir, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".")
    prefix = git(project_dir, "rev-parse", "--show-prefix").strip()
    entries: dict[str, str] = {}
    fields = iter(out.split("\0"))
    for entry in fields:
        if not entry:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":
            next(fields)  # the rename's source path
        entries[path.removeprefix(prefix)] = code
    return entries


def _files_with_markers(project_dir: Path, status: dict[str, str]) -> list[str]:
    """Changed files still holding conflict markers that git does not show as unmerged."""
    found = []
    for path, code in status.items():
        file = project_dir / path
        if code in _UNMERGED or path.endswith(".rej") or not file.is_file():
            continue
        text = file.read_text(encoding="utf-8", errors="replace")
        if any(line.startswith(_MARKERS) for line in text.splitlines()):
            found.append(path)
    return found
