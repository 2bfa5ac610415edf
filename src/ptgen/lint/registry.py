"""The rules by code, from the explicit list in ptgen.lint.rules."""

from __future__ import annotations

from ptgen.lint.model import Rule
from ptgen.lint.rules import ALL
from ptgen.lint.rules.pgn0_files import NOT_CHECKED, SYNTAX_ERROR

RULES: dict[str, Rule] = {rule.code: rule for rule in ALL}
assert len(RULES) == len(ALL) == len({r.name for r in ALL}), "rule codes and names are unique"
CHECKED = [rule for rule in ALL if rule.check is not None]

__all__ = ["CHECKED", "NOT_CHECKED", "RULES", "SYNTAX_ERROR"]
