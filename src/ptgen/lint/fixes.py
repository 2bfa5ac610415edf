"""Fixes, written with LibCST so formatting and comments survive.

Each fix rewrites exactly the node its finding points at (matched by position).
The rewrites are the rules' own (`Rule.fix.rewrite`, in ptgen.lint.rewrites); this module
and that one are the only ones that import LibCST, so linting alone never pays for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ptgen.lint.config import LintConfig
from ptgen.lint.engine import lint_source, read_notebook_or_finding, read_source
from ptgen.lint.model import Edit, Finding
from ptgen.lint.notebook import Notebook, is_notebook
from ptgen.lint.registry import RULES

Span = tuple[int, int, int, int]


@dataclass
class FixResult:
    """One file: its text before and after, and the findings whose fixes were applied."""

    path: Path
    original: str
    fixed: str
    applied: list[Finding] = field(default_factory=list)


def fix_source(
    source: str, findings: list[Finding], unsafe: bool = False
) -> tuple[str, list[Finding]]:
    """Apply the fixes of `findings` to `source`; fills each applied finding's fix.edits."""
    wanted = {_span(f): f for f in findings if f.fixable(unsafe)}
    if not wanted:
        return source, []
    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
        fixer = _Fixer(wanted)
        fixed = wrapper.visit(fixer)
    except (cst.ParserSyntaxError, RecursionError):
        return source, []
    return fixed.code, fixer.applied


def fix_file(path: Path, config: LintConfig, unsafe: bool = False) -> FixResult:
    config = config.for_path(path)
    source = read_source(path, config)
    if not isinstance(source, str):  # not read (reported by linting): nothing to fix
        return FixResult(path, "", "")
    if is_notebook(path):
        return _fix_notebook(path, source, config, unsafe)
    fixed, applied = fix_source(source, lint_source(source, path, config), unsafe)
    return FixResult(path, source, fixed, applied)


def _fix_notebook(path: Path, raw: str, config: LintConfig, unsafe: bool) -> FixResult:
    """Only the fixed cells' sources change; outputs, metadata and layout stay as they were."""
    notebook = read_notebook_or_finding(path, raw, config)
    if not isinstance(notebook, Notebook):
        return FixResult(path, "", "")
    _, applied = fix_source(notebook.source, lint_source(notebook.source, path, config), unsafe)
    if not applied:
        return FixResult(path, raw, raw)
    fixed = notebook.with_edits([e for f in applied if f.fix for e in f.fix.edits])
    return FixResult(path, raw, fixed, [notebook.locate(f) for f in applied])


def fill_edits(findings: list[Finding], config: LintConfig) -> None:
    """Fill `fix.edits` of every fixable finding (for JSON/SARIF output); writes nothing."""
    by_path: dict[Path, list[Finding]] = {}
    for finding in findings:
        if finding.fix is not None:
            by_path.setdefault(finding.path, []).append(finding)
    for path, found in by_path.items():
        source = read_source(path, config)
        if isinstance(source, str) and is_notebook(path):
            _fill_notebook_edits(path, source, found, config)
        elif isinstance(source, str):
            fix_source(source, found, unsafe=True)


def _fill_notebook_edits(path: Path, raw: str, findings: list[Finding], config: LintConfig) -> None:
    notebook = read_notebook_or_finding(path, raw, config)
    if not isinstance(notebook, Notebook):
        return
    joined = [notebook.unlocate(f) for f in findings]
    fix_source(notebook.source, joined, unsafe=True)
    for finding, in_joined in zip(findings, joined, strict=True):
        finding.fix = notebook.locate(in_joined).fix


def _span(finding: Finding) -> Span:
    return (finding.line, finding.col, finding.end_line, finding.end_col)


class _Fixer(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, wanted: dict[Span, Finding]) -> None:
        super().__init__()
        self.wanted = wanted
        self.applied: list[Finding] = []

    def _span(self, node: cst.CSTNode) -> Span:
        where = self.get_metadata(PositionProvider, node)
        return (where.start.line, where.start.column + 1, where.end.line, where.end.column + 1)

    def _rewrite(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:
        span = self._span(original)
        finding = self.wanted.get(span)
        if finding is None or finding.fix is None:
            return updated
        rule_fix = RULES[finding.code].fix
        new = rule_fix.rewrite(updated) if rule_fix else None
        if new is None:
            return updated
        code = cst.Module([]).code_for_node(new)
        finding.fix.edits = [Edit(code, span[0], span[1], span[2], span[3])]
        self.applied.append(finding)
        return new

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        return self._rewrite(original, updated)  # type: ignore[return-value]

    def leave_Attribute(
        self, original: cst.Attribute, updated: cst.Attribute
    ) -> cst.BaseExpression:
        return self._rewrite(original, updated)  # type: ignore[return-value]

    def leave_ImportFrom(
        self, original: cst.ImportFrom, updated: cst.ImportFrom
    ) -> cst.BaseSmallStatement:
        """The findings are on the imported names; the fix rewrites the statement once,
        and only when every name in it has a fix to apply."""
        if isinstance(original.names, cst.ImportStar):
            return updated
        found = [self.wanted.get(self._span(alias)) for alias in original.names]
        if not all(f is not None and f.fix is not None for f in found):
            return updated
        rule_fix = RULES[found[0].code].fix  # type: ignore[union-attr]
        new = rule_fix.rewrite(updated) if rule_fix else None
        if new is None:
            return updated
        span = self._span(original)
        code = cst.Module([]).code_for_node(new)
        for finding in found:
            finding.fix.edits = [Edit(code, *span)]  # type: ignore[union-attr]
            self.applied.append(finding)  # type: ignore[arg-type]
        return new

    def leave_Import(self, original: cst.Import, updated: cst.Import) -> cst.BaseSmallStatement:
        return self._rewrite(original, updated)  # type: ignore[return-value]

    def leave_AugAssign(
        self, original: cst.AugAssign, updated: cst.AugAssign
    ) -> cst.BaseSmallStatement:
        return self._rewrite(original, updated)  # type: ignore[return-value]
