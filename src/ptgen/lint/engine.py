"""Run the rules over files: parse once, check, apply noqa and the rule selection."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

from ptgen.lint import rules_correctness, rules_device, rules_perf, rules_repro, rules_serial
from ptgen.lint.config import LintConfig, LintUsageError
from ptgen.lint.context import FileContext, kwarg
from ptgen.lint.model import Finding, Fix, Rule
from ptgen.lint.noqa import parse_suppressions
from ptgen.lint.registry import CHECKS, SYNTAX_ERROR

RULE_MODULES = (rules_correctness, rules_device, rules_repro, rules_serial, rules_perf)
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


def python_files(paths: Iterable[Path]) -> Iterator[Path]:
    """Every .py file under the given paths, sorted, skipping virtualenvs and caches."""
    for path in paths:
        if path.is_file():
            yield path
        elif path.is_dir():
            for found in sorted(path.rglob("*.py")):
                relative = found.relative_to(path).parts[:-1]
                if not any(p in SKIPPED_DIRS or p.startswith(".") for p in relative):
                    yield found
        else:
            raise LintUsageError(f"{path}: no such file or directory")


def lint_source(source: str, path: Path, config: LintConfig) -> list[Finding]:
    """All findings for one file's text, after noqa and selection."""
    try:
        tree = ast.parse(source, filename=str(path))
    except (SyntaxError, ValueError) as exc:
        found = [_syntax_error(exc, path)]
    else:
        ctx = FileContext.build(path, source, tree, config.target_torch)
        found = list(_run_rules(ctx, config))
    hidden = parse_suppressions(source)
    return sorted(
        (
            f
            for f in found
            if config.selects(f.code) and not hidden.hides(f.code, f.line, f.end_line)
        ),
        key=lambda f: f.sort_key,
    )


def lint_file(path: Path, config: LintConfig) -> list[Finding]:
    try:
        source = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [_finding(SYNTAX_ERROR, path, (1, 1, 1, 1), f"not UTF-8 text ({exc.reason})")]
    except OSError as exc:
        raise LintUsageError(f"{path}: cannot read ({exc.strerror})") from exc
    return lint_source(source, path, config)


def _run_rules(ctx: FileContext, config: LintConfig) -> Iterator[Finding]:
    for rule, check in CHECKS:
        if not config.selects(rule.code):
            continue
        for node, message in check(ctx):
            fix = _fix(rule, node)
            yield _finding(rule, ctx.path, ctx.span(node), message, fix)


def _fix(rule: Rule, node: ast.AST) -> Fix | None:
    """Whether this finding has a fix (edits are filled in by ptgen.lint.fixes on demand)."""
    if rule.fix is None:
        return None
    if rule.fix.startswith("drop-kwarg:"):
        if not isinstance(node, ast.Call) or kwarg(node, rule.fix.split(":", 1)[1]) is None:
            return None
    applicability = "unsafe" if rule.unsafe_fix else "safe"
    return Fix(applicability, FIX_MESSAGES.get(rule.fix, rule.fix))


FIX_MESSAGES = {
    "augassign": "Rewrite as an out-of-place assignment",
    "drop-kwarg:persistent_workers": "Remove `persistent_workers=True`",
    "drop-kwarg:set_to_none": "Remove `set_to_none=False`",
    "state-dict": "Save `.state_dict()` instead of the module",
    "weights-only": "Load with `weights_only=True`",
}


def _finding(
    rule: Rule, path: Path, span: tuple[int, int, int, int], message: str, fix: Fix | None = None
) -> Finding:
    line, col, end_line, end_col = span
    return Finding(
        rule.code, rule.name, message, path, line, col, end_line, end_col, rule.severity, fix
    )


def _syntax_error(exc: SyntaxError | ValueError, path: Path) -> Finding:
    if isinstance(exc, SyntaxError):
        line, col = exc.lineno or 1, exc.offset or 1
        return _finding(SYNTAX_ERROR, path, (line, col, line, col), f"syntax error: {exc.msg}")
    return _finding(SYNTAX_ERROR, path, (1, 1, 1, 1), f"cannot parse: {exc}")
