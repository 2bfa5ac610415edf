"""Fixes, written with LibCST so formatting and comments survive.

Each fix rewrites exactly the node its finding points at (matched by position).
This module is the only one that imports LibCST, so linting alone never pays for it.
"""

from __future__ import annotations

from collections.abc import Callable
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
BINARY_FOR = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
}
PRECEDENCE = {cst.Add: 1, cst.Subtract: 1, cst.Multiply: 2, cst.Divide: 2, cst.FloorDivide: 2}
PRECEDENCE.update({cst.Modulo: 2, cst.MatrixMultiply: 2, cst.Power: 3})
LOOSE = (
    cst.BooleanOperation,
    cst.Comparison,
    cst.IfExp,
    cst.Lambda,
    cst.NamedExpr,
    cst.UnaryOperation,
)


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
        kind = RULES[finding.code].fix or ""
        rewrite = REWRITES.get(kind.split(":", 1)[0])
        new = rewrite(updated, kind) if rewrite else None
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
        from ptgen.lint.fixes_api import rewrite_import_from

        new = rewrite_import_from(updated)
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


def _drop_kwarg(call: cst.Call, kind: str) -> cst.Call | None:
    """Remove one keyword argument, keeping the commas and line breaks of the rest."""
    name = kind.split(":", 1)[1]
    args = list(call.args)
    index = next((i for i, a in enumerate(args) if a.keyword and a.keyword.value == name), None)
    if index is None:
        return None
    removed = args.pop(index)
    if index == len(args) and args:  # it was the last: the one before takes its comma
        args[-1] = args[-1].with_changes(comma=_closing_comma(args[-1].comma, removed.comma))
    return call.with_changes(args=args)


def _closing_comma(kept: object, removed: object) -> object:
    """The comma for the new last argument: its own comment, the removed one's line end."""
    if not isinstance(removed, cst.Comma):
        return cst.MaybeSentinel.DEFAULT
    after = removed.whitespace_after
    if isinstance(kept, cst.Comma) and isinstance(after, cst.ParenthesizedWhitespace):
        own = kept.whitespace_after
        if isinstance(own, cst.ParenthesizedWhitespace):
            return kept.with_changes(whitespace_after=own.with_changes(last_line=after.last_line))
    return removed


def _weights_only(call: cst.Call, kind: str) -> cst.Call | None:
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword and arg.keyword.value == "weights_only":
            args[i] = arg.with_changes(value=cst.Name("True"))
            return call.with_changes(args=args)
    return _append_kwarg(call, "weights_only", cst.Name("True"))


def _append_kwarg(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call | None:
    if not call.args:
        return None
    args, last = list(call.args), call.args[-1]
    no_space = cst.SimpleWhitespace("")
    new = cst.Arg(
        value, keyword=cst.Name(name), comma=last.comma, equal=cst.AssignEqual(no_space, no_space)
    )
    multiline = isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace)
    spacing = call.whitespace_before_args if multiline else cst.SimpleWhitespace(" ")
    args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=spacing))
    return call.with_changes(args=[*args, new])


def _state_dict(call: cst.Call, kind: str) -> cst.Call | None:
    if not call.args or call.args[0].keyword is not None:
        return None
    first = call.args[0]
    saved = cst.Call(func=cst.Attribute(value=first.value, attr=cst.Name("state_dict")))
    return call.with_changes(args=[first.with_changes(value=saved), *call.args[1:]])


def _augassign(node: cst.AugAssign, kind: str) -> cst.Assign | None:
    operator = BINARY_FOR.get(type(node.operator))
    if operator is None:
        return None
    right = node.value
    tight = (
        isinstance(right, cst.BinaryOperation)
        and PRECEDENCE.get(type(right.operator), 0) <= PRECEDENCE[operator]
    )
    if (tight or isinstance(right, LOOSE)) and not right.lpar:
        right = right.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    op = node.operator
    target = cst.AssignTarget(
        node.target,  # type: ignore[arg-type]
        whitespace_before_equal=op.whitespace_before,
        whitespace_after_equal=op.whitespace_after,
    )
    value = cst.BinaryOperation(left=node.target, operator=operator(), right=right)  # type: ignore[arg-type]
    return cst.Assign(targets=[target], value=value, semicolon=node.semicolon)


def _rename_api(node: cst.BaseExpression, kind: str) -> cst.BaseExpression | None:
    """`torch.ger` -> `torch.outer` (a rename from the table), or a call's arguments
    rewritten (`torch.qr(A, some=False)` -> `torch.linalg.qr(A, mode="complete")`)."""
    from ptgen.lint.fixes_api import rewrite_call
    from ptgen.lint.rules_deprecated import api_spelt, replacement_for

    if isinstance(node, cst.Call):
        found = api_spelt(cst.Module([]).code_for_node(node.func))
        return rewrite_call(node, found[0], found[1].fix) if found else None
    new = replacement_for(cst.Module([]).code_for_node(node))
    return cst.parse_expression(new) if new else None


def _use_reentrant(call: cst.Call, kind: str) -> cst.Call | None:
    return _append_kwarg(call, "use_reentrant", cst.Name("False"))


def _rename_attr(node: cst.Attribute, kind: str) -> cst.Attribute:
    return node.with_changes(attr=cst.Name(kind.split(":", 1)[1]))


def _weights(call: cst.Call, kind: str) -> cst.Call | None:
    from ptgen.lint.fixes_api import rewrite_pretrained

    return rewrite_pretrained(call)


def _from_import(node: cst.Import, kind: str) -> cst.ImportFrom | None:
    """`import torchvision.models as models` -> `from torchvision import models`."""
    (alias,) = node.names
    if not isinstance(alias.name, cst.Attribute):
        return None
    return cst.ImportFrom(
        module=alias.name.value,  # type: ignore[arg-type]
        names=[cst.ImportAlias(name=alias.name.attr)],
        semicolon=node.semicolon,
    )


REWRITES: dict[str, Callable] = {
    "use-reentrant": _use_reentrant,
    "weights": _weights,
    "from-import": _from_import,
    "rename-attr": _rename_attr,
    "rename-api": _rename_api,
    "drop-kwarg": _drop_kwarg,
    "weights-only": _weights_only,
    "state-dict": _state_dict,
    "augassign": _augassign,
}
