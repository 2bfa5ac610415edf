"""`ptgen lint`: find the pytorch-patterns anti-patterns in any PyTorch code.

Use it as a library the way the CLI does::

    from pathlib import Path
    from ptgen.lint import lint_paths, fix_paths

    for finding in lint_paths([Path("src")], ignore=["PGN5"]):
        print(finding.path, finding.line, finding.code, finding.message)
    fix_paths([Path("src")])  # applies the safe fixes in place

Nothing here imports torch; LibCST is imported only when fixing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ptgen.lint.config import LintConfig, LintUsageError, load_config
from ptgen.lint.engine import lint_file, lint_source, python_files
from ptgen.lint.model import Edit, Finding, Fix, Rule, Severity
from ptgen.lint.registry import RULES

if TYPE_CHECKING:
    from ptgen.lint.fixes import FixResult

__all__ = [
    "RULES",
    "Edit",
    "Finding",
    "Fix",
    "FixResult",
    "LintConfig",
    "LintUsageError",
    "Rule",
    "Severity",
    "fix_paths",
    "lint_paths",
    "lint_source",
]


def _config(paths: list[Path], select: list[str] | None, ignore: list[str] | None) -> LintConfig:
    return load_config(paths[0] if paths else Path.cwd(), select, ignore)


def lint_paths(
    paths: list[Path],
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    config: LintConfig | None = None,
) -> list[Finding]:
    """Findings for every .py file under `paths`, sorted by file and position."""
    config = config or _config(paths, select, ignore)
    return [f for path in python_files(paths) for f in lint_file(path, config)]


def fix_paths(
    paths: list[Path],
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    unsafe: bool = False,
    write: bool = True,
    config: LintConfig | None = None,
) -> list[FixResult]:
    """Apply the fixes of the findings (safe ones, or all with `unsafe`); see FixResult."""
    from ptgen.lint.fixes import fix_file

    config = config or _config(paths, select, ignore)
    results = [fix_file(path, config, unsafe) for path in python_files(paths)]
    changed = [r for r in results if r.fixed != r.original]
    if write:
        for result in changed:
            result.path.write_bytes(result.fixed.encode("utf-8"))  # keeps the line endings
    return changed


def __getattr__(name: str) -> object:
    if name == "FixResult":  # defined beside LibCST code; imported lazily
        from ptgen.lint.fixes import FixResult

        return FixResult
    raise AttributeError(name)
