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

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ptgen.lint.config import LintConfig, LintUsageError, load_config
from ptgen.lint.engine import check_file, lint_source, source_files
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
    "LintRun",
    "LintUsageError",
    "Rule",
    "Severity",
    "fix_paths",
    "lint_paths",
    "lint_run",
    "lint_source",
]


def _config(paths: list[Path], select: list[str] | None, ignore: list[str] | None) -> LintConfig:
    return load_config(paths[0] if paths else Path.cwd(), select, ignore)


@dataclass
class LintRun:
    """What a lint run found, and which files it read."""

    findings: list[Finding] = field(default_factory=list)
    checked: list[Path] = field(default_factory=list)
    skipped: dict[Path, str] = field(default_factory=dict)  # path -> why it was not read


def lint_paths(
    paths: list[Path],
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    config: LintConfig | None = None,
) -> list[Finding]:
    """Findings for every .py file and notebook under `paths`, sorted by file and position."""
    return lint_run(paths, config or _config(paths, select, ignore)).findings


def lint_run(paths: list[Path], config: LintConfig) -> LintRun:
    """`lint_paths`, also saying which files were checked and which were skipped and why."""
    run = LintRun()
    for path in source_files(paths, config):
        findings, skipped = check_file(path, config)
        run.findings += findings
        if skipped:
            run.skipped[path] = skipped
        else:
            run.checked.append(path)
    return run


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
    results = [fix_file(path, config, unsafe) for path in source_files(paths, config)]
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
