"""Run the rules over files: parse once, check, apply noqa and the rule selection."""

from __future__ import annotations

import ast
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path

from ptgen.lint.config import LintConfig, LintUsageError
from ptgen.lint.context import FileContext
from ptgen.lint.model import NO_FIX, UNSAFE, Finding, Fix, Rule
from ptgen.lint.noqa import parse_suppressions
from ptgen.lint.notebook import SUFFIX as NOTEBOOK
from ptgen.lint.notebook import Notebook, NotNotebook, OtherLanguage, is_notebook, read_notebook
from ptgen.lint.registry import CHECKED, NOT_CHECKED, SYNTAX_ERROR

READ_SLACK = 1 << 16  # read past the stat size, in case the file grew (never the whole cap)
NOTEBOOK_SIZE_FACTOR = 50  # a notebook's file may be this much larger than its code (outputs)
TOO_DEEP = "nested too deeply to analyse (Python's recursion limit)"
SKIPPED_DIRS = {
    ".git",
    ".hg",
    ".venv",
    "venv",
    "__pycache__",
    "node_modules",
    "build",
    "dist",
    ".tox",
    ".nox",
    ".eggs",
    "site-packages",
}


def source_files(paths: Iterable[Path], config: LintConfig | None = None) -> Iterator[Path]:
    """Every .py and .ipynb path under the given paths, sorted, skipping virtualenvs,
    caches and the config's `extend-exclude` (a path given by name is always linted).

    Paths that exist but are no regular file (a FIFO, a link to a device) are yielded
    too: `check_file` reports them as PGN002 instead of reading them.
    """
    for path in paths:
        if path.is_dir():
            found = [*path.rglob("*.py"), *path.rglob(f"*{NOTEBOOK}")]
            for file in sorted(found):
                relative = file.relative_to(path).parts[:-1]
                hidden = any(p in SKIPPED_DIRS or p.startswith(".") for p in relative)
                if not hidden and not (config and config.excludes(file)):
                    yield file
        elif path.exists() or path.is_symlink():
            yield path
        else:
            raise LintUsageError(f"{path}: no such file or directory")


def lint_source(source: str, path: Path, config: LintConfig) -> list[Finding]:
    """All findings for one file's text, after noqa and selection."""
    found = _check(source, path, config)
    hidden = parse_suppressions(source)
    return sorted(
        (
            f
            for f in found
            if config.selects(f.code) and not hidden.hides(f.code, f.line, f.end_line)
        ),
        key=lambda f: f.sort_key,
    )


def _check(source: str, path: Path, config: LintConfig) -> list[Finding]:
    """Parse and run the rules; a file too deeply nested for the parser is one finding."""
    try:
        tree = ast.parse(source, filename=str(path))
    except (SyntaxError, ValueError) as exc:
        return [_syntax_error(exc, path)]
    except (RecursionError, MemoryError):  # MemoryError: the parser's own stack overflowed
        return [_not_checked(path, TOO_DEEP)]
    try:
        ctx = FileContext.build(path, source, tree, config.target_torch)
        return list(_run_rules(ctx, config))
    except RecursionError:  # a rule's recursive helper (ast.unparse) on a deep expression
        return [_not_checked(path, TOO_DEEP)]


def read_source(path: Path, config: LintConfig) -> str | Finding:
    """The text of a regular file within the size limit, or the PGN002/PGN001 finding why not.

    The type and size come from `os.stat` (following links) before anything is opened,
    so a FIFO or a link to /dev/zero is never read. A notebook may be larger (its outputs
    and images are not linted): the limit holds for its code cells (`read_notebook_or_finding`).
    """
    cap = config.max_file_size * (NOTEBOOK_SIZE_FACTOR if is_notebook(path) else 1)
    try:
        info = os.stat(path)
    except OSError as exc:
        what = "a broken symbolic link" if path.is_symlink() else exc.strerror
        return _not_checked(path, f"cannot read it ({what})")
    if not stat.S_ISREG(info.st_mode):
        return _not_checked(path, f"not a regular file ({_file_kind(path, info.st_mode)})")
    if info.st_size > cap:
        size, limit = _megabytes(info.st_size), _megabytes(cap)
        return _not_checked(path, f"{size} is over the {limit} limit (--max-file-size)")
    try:
        with open(path, "rb") as handle:
            data = handle.read(min(cap + 1, info.st_size + READ_SLACK))
    except OSError as exc:
        raise LintUsageError(f"{path}: cannot read ({exc.strerror})") from exc
    if len(data) > cap:  # grew since stat
        return _not_checked(path, f"over the {_megabytes(cap)} limit")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return _finding(SYNTAX_ERROR, path, (1, 1, 1, 1), f"not UTF-8 text ({exc.reason})")


def check_file(path: Path, config: LintConfig) -> tuple[list[Finding], str]:
    """The file's findings, and why it was not read ("" when it was)."""
    config = config.for_path(path)
    source = read_source(path, config)
    if is_notebook(path) and isinstance(source, str):
        source = read_notebook_or_finding(path, source, config)
    if isinstance(source, Finding):
        skipped = source.message if source.code == NOT_CHECKED.code else ""
        return ([source] if config.selects(source.code) else []), skipped
    if isinstance(source, Notebook):
        return lint_notebook(source, config), ""
    return lint_source(source, path, config), ""


def read_notebook_or_finding(path: Path, raw: str, config: LintConfig) -> Notebook | Finding:
    """The notebook, or the one finding that says why it cannot be linted."""
    try:
        notebook = read_notebook(path, raw)
    except OtherLanguage as exc:
        return _not_checked(path, str(exc))
    except NotNotebook as exc:
        return _finding(SYNTAX_ERROR, path, (1, 1, 1, 1), str(exc))
    code = len(notebook.source.encode("utf-8"))
    if code > config.max_file_size:
        size, limit = _megabytes(code), _megabytes(config.max_file_size)
        return _not_checked(path, f"its code is {size}, over the {limit} limit (--max-file-size)")
    return notebook


def lint_notebook(notebook: Notebook, config: LintConfig) -> list[Finding]:
    """Findings in the notebook's code cells, each located in its cell."""
    found = [notebook.locate(f) for f in lint_source(notebook.source, notebook.path, config)]
    for cell, error in notebook.broken:
        if config.selects(SYNTAX_ERROR.code):
            found.append(replace(_syntax_error(error, notebook.path), cell=cell.number))
    return sorted(found, key=lambda f: f.sort_key)


def _file_kind(path: Path, mode: int) -> str:
    kinds = {
        stat.S_ISFIFO: "a FIFO",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISSOCK: "a socket",
    }
    kind = next((name for test, name in kinds.items() if test(mode)), "not a file")
    if path.is_symlink():
        kind += f" via a symbolic link to {os.readlink(path)}"
    return kind


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB" if size >= 100_000 else f"{size / 1000:.1f} kB"


def _run_rules(ctx: FileContext, config: LintConfig) -> Iterator[Finding]:
    for rule in CHECKED:
        if not config.selects(rule.code):
            continue
        for node, message, *override in rule.check(ctx):  # type: ignore[misc]
            fix = _fix(rule, node, override[0] if override else "")
            yield _finding(rule, ctx.path, ctx.span(node), message, fix)


def _fix(rule: Rule, node: ast.AST, override: str) -> Fix | None:
    """Whether this finding has a fix (edits are filled in by ptgen.lint.fixes on demand)."""
    if rule.fix is None or override == NO_FIX or not rule.fix.offered(node):
        return None
    applicability = "unsafe" if rule.fix.unsafe or override == UNSAFE else "safe"
    return Fix(applicability, rule.fix.message)


def _finding(
    rule: Rule, path: Path, span: tuple[int, int, int, int], message: str, fix: Fix | None = None
) -> Finding:
    line, col, end_line, end_col = span
    return Finding(
        rule.code, rule.name, message, path, line, col, end_line, end_col, rule.severity, fix
    )


def _not_checked(path: Path, why: str) -> Finding:
    return _finding(NOT_CHECKED, path, (1, 1, 1, 1), f"not checked: {why}")


def _syntax_error(exc: SyntaxError | ValueError, path: Path) -> Finding:
    if isinstance(exc, SyntaxError):
        line, col = exc.lineno or 1, exc.offset or 1
        return _finding(SYNTAX_ERROR, path, (line, col, line, col), f"syntax error: {exc.msg}")
    return _finding(SYNTAX_ERROR, path, (1, 1, 1, 1), f"cannot parse: {exc}")
