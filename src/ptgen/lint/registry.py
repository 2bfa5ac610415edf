"""The rule registry: each check registers itself with its metadata."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ptgen.lint.context import FileContext
from ptgen.lint.model import Rule, Severity

# The node to report and the message; a third item, NO_FIX or UNSAFE, withholds or
# demotes the rule's fix for this finding (where the fix would change behaviour).
Hit = tuple[ast.AST, str] | tuple[ast.AST, str, str]
NO_FIX = "none"
UNSAFE = "unsafe"
Check = Callable[[FileContext], Iterator[Hit]]

RULES: dict[str, Rule] = {}
CHECKS: list[tuple[Rule, Check]] = []

SYNTAX_ERROR = Rule("PGN001", "syntax-error", Severity.ERROR, "The file does not parse as Python.")
NOT_CHECKED = Rule(
    "PGN002",
    "file-not-checked",
    Severity.WARNING,
    "A file that was skipped: not a regular file, over the size limit, or nested too deeply.",
)
RULES[SYNTAX_ERROR.code] = SYNTAX_ERROR
RULES[NOT_CHECKED.code] = NOT_CHECKED


def rule(
    code: str,
    name: str,
    severity: Severity,
    summary: str,
    fix: str | None = None,
    unsafe_fix: bool = False,
) -> Callable[[Check], Check]:
    """Register `check` under `code`; codes and names must be unique."""

    def register(check: Check) -> Check:
        assert code not in RULES and all(r.name != name for r in RULES.values()), code
        RULES[code] = Rule(code, name, severity, summary, fix, unsafe_fix)
        CHECKS.append((RULES[code], check))
        return check

    return register
