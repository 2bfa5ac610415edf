"""The data every part of the linter shares: rules, findings, fixes."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path

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


@dataclass(frozen=True)
class Rule:
    code: str  # e.g. PGN105
    name: str  # kebab-case, e.g. persistent-workers-without-workers
    severity: Severity
    summary: str  # one line for the docs and SARIF
    fix: str | None = None  # fix kind understood by ptgen.lint.fixes
    unsafe_fix: bool = False  # True: applied only with --unsafe-fixes

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
