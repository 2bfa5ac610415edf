"""Lint settings: CLI options over `[tool.ptgen.lint]` of the nearest pyproject.toml."""

from __future__ import annotations

import importlib.machinery
import os
import re
import sys
from dataclasses import dataclass, field, replace
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from ptgen.errors import PtgenError
from ptgen.lint.model import Severity
from ptgen.lint.registry import RULES

MAX_FILE_SIZE = 1_000_000  # bytes; ~2.5 s and ~250 MB to lint (bench/bench_lint_limits.py)
SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|kb|k|mb|m)?\s*$", re.I)
SIZE_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1_000_000, "mb": 1_000_000}
UNKNOWN_TORCH = (2, 0)  # when torch is not installed: assume the oldest 2.x, flag more
OPT_IN_PREFIX = "PGN6"  # style rules: too many findings on ordinary code to be on by default


class LintUsageError(PtgenError):
    """Bad lint options or configuration (exit code 2)."""


@dataclass
class LintConfig:
    select: list[str] | None = None  # None: every rule
    ignore: list[str] = field(default_factory=list)
    target_torch: tuple[int, int] = UNKNOWN_TORCH
    fail_on: Severity = Severity.INFO
    max_file_size: int = MAX_FILE_SIZE  # bytes; larger files are reported (PGN002), not read
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)  # glob -> codes
    extend_exclude: list[str] = field(default_factory=list)  # globs skipped in folders
    root: Path = field(default_factory=Path.cwd)  # globs are relative to this folder

    def for_path(self, path: Path) -> LintConfig:
        """This config with the `per-file-ignores` that match `path` added to `ignore`."""
        matched = [c for g, c in self.per_file_ignores.items() if self.matches(path, g)]
        extra = [code for codes in matched for code in codes]
        return replace(self, ignore=[*self.ignore, *extra]) if extra else self

    def excludes(self, path: Path) -> bool:
        return any(self.matches(path, glob) for glob in self.extend_exclude)

    def matches(self, path: Path, glob: str) -> bool:
        """Ruff's way: the glob against the path from the root (`**/` may match no folder),
        or against the file or folder name when the glob has no `/`."""
        try:
            relative = path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            relative = path.as_posix()
        globs = {glob.rstrip("/"), glob.rstrip("/").replace("**/", "")}
        if "/" not in glob.rstrip("/"):
            return any(fnmatch(part, g) for part in Path(relative).parts for g in globs)
        return any(fnmatch(relative, g) or fnmatch(relative, g + "/*") for g in globs)

    def selects(self, code: str) -> bool:
        """The most specific matching prefix wins; `ignore` wins a tie.

        Opt-in rules (PGN6xx, style) run only when selected by `ALL` or a prefix more
        specific than `PGN` (`PGN6`, `PGN601`).
        """
        opt_in = code.startswith(OPT_IN_PREFIX)
        chosen = -1 if self.select or opt_in else 0
        for prefix in self.select or []:
            if prefix == "ALL" or (code.startswith(prefix) and not (opt_in and len(prefix) <= 3)):
                chosen = max(chosen, 0 if prefix == "ALL" else len(prefix))
        dropped = max((len(p) for p in self.ignore if code.startswith(p) or p == "ALL"), default=-1)
        return chosen >= 0 and chosen > dropped


def parse_version(text: str) -> tuple[int, int]:
    match = re.match(r"^\s*(\d+)\.(\d+)", text)
    if not match:
        raise LintUsageError(f"not a torch version: {text!r} (expected e.g. 2.4)")
    return int(match.group(1)), int(match.group(2))


def parse_size(text: str) -> int:
    """`500000`, `500KB`, `2MB` -> bytes."""
    match = SIZE_RE.match(str(text))
    if not match or float(match.group(1)) <= 0:
        raise LintUsageError(f"not a file size: {text!r} (expected e.g. 2MB or 500000)")
    return int(float(match.group(1)) * SIZE_UNITS[(match.group(2) or "").lower()])


def installed_torch() -> tuple[int, int]:
    """The installed torch's version from its metadata; torch itself is never imported."""
    version = plain_dist_info_version("torch")
    if version is None:  # not the plain case: importlib.metadata (a tenth of a lint run)
        from importlib import metadata

        try:
            version = metadata.version("torch")
        except metadata.PackageNotFoundError:
            return UNKNOWN_TORCH
    return parse_version(version)


def plain_dist_info_version(name: str) -> str | None:
    """`importlib.metadata.version(name)` without importing importlib.metadata (its email
    parser and zipfile imports cost more than linting a small project), in the plain case
    only: the standard path finder is the one distribution finder, and the first folder
    on sys.path with metadata for `name` holds one `name-*.dist-info` folder whose METADATA
    has a Version header. None for anything else (an egg, a zip, two candidates in one
    folder, no match): the caller then asks importlib.metadata, which has the last word.
    """
    finders = [f for f in sys.meta_path if hasattr(f, "find_distributions")]
    if finders != [importlib.machinery.PathFinder]:
        return None
    wanted = _normalized(name)
    for entry in sys.path:
        root = entry or "."
        try:
            children = os.listdir(root)
        except OSError:
            if os.path.exists(root):  # a zip archive, or a folder it may read otherwise
                return None
            continue
        found = [
            child
            for child in children
            if child.lower().endswith((".dist-info", ".egg-info"))
            and _normalized(child.lower().rpartition(".")[0].partition("-")[0]) == wanted
        ]
        if os.path.basename(root).lower().endswith(".egg") or len(found) > 1:
            return None
        if found:
            if not found[0].lower().endswith(".dist-info"):
                return None
            return _version_header(os.path.join(root, found[0], "METADATA"))
    return None


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")  # as importlib.metadata


def _version_header(path: str) -> str | None:
    """The first Version header of a METADATA file, as the email parser reads it."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if not line.strip():
            return None  # the end of the headers
        header, colon, value = line.partition(":")
        if not colon:
            return None  # not a header line: left to email
        if header.lower() == "version":
            following = lines[number + 1] if number + 1 < len(lines) else ""
            if following[:1] in (" ", "\t"):  # a folded header: rare, left to email
                return None
            return value.lstrip(" \t")
    return None


def check_codes(prefixes: list[str]) -> list[str]:
    upper = [p.strip().upper() for p in prefixes if p.strip()]
    for prefix in upper:
        if prefix != "ALL" and not any(code.startswith(prefix) for code in RULES):
            raise LintUsageError(f"{prefix!r} matches no lint rule (codes are PGN001..PGN7xx)")
    return upper


def find_pyproject(start: Path) -> Path | None:
    here = start.resolve()
    for folder in [here, *here.parents] if here.is_dir() else here.parents:
        if (folder / "pyproject.toml").is_file():
            return folder / "pyproject.toml"
    return None


def _per_file_ignores(table: dict[str, Any]) -> dict[str, list[str]]:
    found = table.get("per-file-ignores", {})
    if not isinstance(found, dict) or not all(isinstance(v, list) for v in found.values()):
        raise LintUsageError('per-file-ignores: expected a table of glob = ["CODE", ...]')
    return {glob: check_codes(codes) for glob, codes in found.items()}


def _globs(table: dict[str, Any], key: str) -> list[str]:
    found = table.get(key, [])
    if not isinstance(found, list) or not all(isinstance(g, str) for g in found):
        raise LintUsageError(f'{key}: expected a list of globs, e.g. ["notebooks/scratch/*"]')
    return found


def read_table(pyproject: Path | None) -> dict[str, Any]:
    if pyproject is None:
        return {}
    from ptgen._toml import tomllib  # tomli on Python 3.10

    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LintUsageError(f"{pyproject}: cannot read [tool.ptgen.lint] ({exc})") from exc
    return data.get("tool", {}).get("ptgen", {}).get("lint", {})


def load_config(
    start: Path,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    target_torch: str | None = None,
    fail_on: str | None = None,
    max_file_size: str | None = None,
) -> LintConfig:
    """Options given here win over the file (`ignore` adds to it); the file over defaults."""
    pyproject = find_pyproject(start)
    table = read_table(pyproject)
    chosen_select = select if select is not None else table.get("select")
    version = target_torch or table.get("target-torch")
    try:
        severity = Severity.parse(fail_on or table.get("fail-on", "info"))
    except ValueError as exc:
        raise LintUsageError(str(exc)) from None
    return LintConfig(
        select=check_codes(chosen_select) if chosen_select is not None else None,
        ignore=check_codes([*table.get("ignore", []), *(ignore or [])]),
        target_torch=parse_version(str(version)) if version else installed_torch(),
        fail_on=severity,
        max_file_size=parse_size(max_file_size or table.get("max-file-size", MAX_FILE_SIZE)),
        per_file_ignores=_per_file_ignores(table),
        extend_exclude=_globs(table, "extend-exclude"),
        root=pyproject.parent if pyproject else Path.cwd(),
    )
