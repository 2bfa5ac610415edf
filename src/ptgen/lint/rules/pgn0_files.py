"""PGN0xx: findings about a file as a whole, reported by the engine (no check of their own)."""

from __future__ import annotations

from ptgen.lint.model import Rule, Severity

SYNTAX_ERROR = Rule("PGN001", "syntax-error", Severity.ERROR, "The file does not parse as Python.")
NOT_CHECKED = Rule(
    "PGN002",
    "file-not-checked",
    Severity.WARNING,
    "A file that was skipped: not a regular file, over the size limit, or nested too deeply.",
)
RULES: tuple[Rule, ...] = (SYNTAX_ERROR, NOT_CHECKED)
