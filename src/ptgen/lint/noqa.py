"""`# noqa` comments: per line (`# noqa`, `# noqa: PGN101,PGN402`) and per file.

A file-level directive is a comment line `# ptgen: noqa` (all rules) or
`# ptgen: noqa: PGN201,PGN5` (those codes). Codes may be prefixes in both kinds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CODES = r"(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*)"
LINE_RE = re.compile(rf"#\s*noqa(?::\s*{CODES})?", re.I)
FILE_RE = re.compile(rf"^\s*#\s*ptgen:\s*noqa(?::\s*{CODES})?\s*$", re.I)
ALL: frozenset[str] = frozenset({"*"})


@dataclass
class Suppressions:
    whole_file: frozenset[str] = frozenset()  # ALL, some codes, or empty
    lines: dict[int, frozenset[str]] = field(default_factory=dict)

    def hides(self, code: str, *lines: int) -> bool:
        if _matches(self.whole_file, code):
            return True
        return any(_matches(self.lines.get(line, frozenset()), code) for line in lines)


def _matches(codes: frozenset[str], code: str) -> bool:
    """A code matches itself and any prefix of it (`PGN4` hides PGN401..PGN499)."""
    return codes is ALL or any(code.startswith(prefix) for prefix in codes)


def _codes(match: re.Match[str]) -> frozenset[str]:
    text = match.group("codes")
    return ALL if not text else frozenset(re.split(r"[,\s]+", text.upper()))


def parse_suppressions(source: str) -> Suppressions:
    """Find suppressions; only lines that mention noqa are looked at (fast on big files)."""
    found = Suppressions()
    if "noqa" not in source.lower():
        return found
    for number, line in enumerate(source.splitlines(), start=1):
        if "noqa" not in line.lower():
            continue
        whole = FILE_RE.match(line)
        if whole:
            codes = _codes(whole)
            found.whole_file = ALL if ALL in (codes, found.whole_file) else found.whole_file | codes
            continue
        match = LINE_RE.search(line)
        if match:
            found.lines[number] = _codes(match)
    return found
