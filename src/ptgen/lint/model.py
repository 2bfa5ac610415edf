"""The data every part of the linter shares: rules, findings, fixes."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any

DOCS = "docs/lint.md"


class Severity(IntEnum):
    """Ordered so that `finding.severity >= fail_on` decides the exit code."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            names = ", ".join(s.name.lower() for s in cls)
            raise ValueError(f"unknown severity {text!r}; choose one of {names}") from None

    def __str__(self) -> str:
        return self.name.lower()


# What a check yields: the node to report and the message; a third item, NO_FIX or
# UNSAFE, withholds or demotes the rule's fix for this finding (where it would change
# behaviour).
Hit = tuple[ast.AST, str] | tuple[ast.AST, str, str]
NO_FIX = "none"
UNSAFE = "unsafe"
Check = Callable[[Any], Iterator[Hit]]  # FileContext -> hits
Rewrite = Callable[[Any], Any]  # the reported LibCST node -> its replacement, or None


def _always(node: ast.AST) -> bool:
    return True


@dataclass(frozen=True)
class RuleFix:
    """A rule's fix: what it does, how, and whether it is safe. `rewrite` gets the LibCST
    node of the finding (it imports LibCST itself, so linting never pays for it);
    `offered` says from the ast node whether this finding gets the fix at all."""

    message: str
    rewrite: Rewrite
    unsafe: bool = False
    offered: Callable[[ast.AST], bool] = _always


@dataclass(frozen=True)
class Rule:
    code: str  # e.g. PGN105
    name: str  # kebab-case, e.g. persistent-workers-without-workers
    severity: Severity
    summary: str  # one line for the docs and SARIF
    check: Check | None = field(default=None, compare=False, repr=False)  # None: file-level
    fix: RuleFix | None = None

    @property
    def unsafe_fix(self) -> bool:
        """True: its fix is applied only with --unsafe-fixes."""
        return self.fix is not None and self.fix.unsafe

    @property
    def url(self) -> str:
        return f"{DOCS}#{self.code.lower()}-{self.name}"


@dataclass(frozen=True)
class Edit:
    """Replace the text between two 1-based (row, column) positions with `content`."""

    content: str
    row: int
    column: int
    end_row: int
    end_column: int


@dataclass
class Fix:
    applicability: str  # "safe" or "unsafe"
    message: str
    edits: list[Edit] = field(default_factory=list)


@dataclass
class Finding:
    code: str
    name: str
    message: str
    path: Path
    line: int  # 1-based
    col: int  # 1-based, in characters
    end_line: int
    end_col: int
    severity: Severity
    fix: Fix | None = None
    cell: int | None = None  # in a notebook: the cell (1-based), and line counts in it

    def fixable(self, unsafe: bool) -> bool:
        """`--fix` applies this finding's fix (unsafe ones only with `--unsafe-fixes`)."""
        return self.fix is not None and (unsafe or self.fix.applicability == "safe")

    @property
    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (str(self.path), self.cell or 0, self.line, self.col, self.code)

    @property
    def where(self) -> str:
        """`train.py:3:1`, or `course.ipynb:cell 4:3:1` in a notebook."""
        cell = f":cell {self.cell}" if self.cell is not None else ""
        return f"{self.path}{cell}:{self.line}:{self.col}"
