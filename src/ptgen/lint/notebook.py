"""Jupyter notebooks: their code cells as one Python text, and findings mapped back to cells.

The code cells are joined in order (so a model defined in one cell is known in the next,
as when the notebook runs); IPython lines that are not Python (`%magic`, `!shell`,
`obj?` help) become `pass` at their indentation, so every other line keeps its number
and text. A cell that starts with a cell magic is skipped unless the magic runs its
body as Python (`%%time`, `%%capture`, ...), as ruff does. A cell that does not parse
is reported (PGN001, in that cell) and left out, and the rest is linted.

Cells are numbered from 1 at the top of the notebook, markdown cells included: the
number a reader counts when scrolling. Nothing here imports nbformat: the format is
plain JSON, read and written with `json` so that a fix changes nothing but the source
of the cells it fixes.
"""

from __future__ import annotations

import ast
import copy
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ptgen.lint.model import Edit, Finding

SUFFIX = ".ipynb"
PYTHON_CELL_MAGICS = {"capture", "debug", "prun", "pypy", "python", "python3", "time", "timeit"}
# `%time x`, `!ls`, `files = !ls`, `out = %sx ls`, `obj?`, `??obj`: lines IPython rewrites.
IPYTHON_LINE_RE = re.compile(r"^\s*(?:[%!?]|[\w.,\s\[\]()]+=\s*[%!](?!=)|.*\S\?{1,2}\s*$)")


class NotNotebook(ValueError):
    """The file is not a notebook ptgen can read (PGN001); the message says why."""


class OtherLanguage(NotNotebook):
    """A notebook of another language (R, Julia): not checked (PGN002)."""


@dataclass(frozen=True)
class Cell:
    number: int  # 1-based position among all the notebook's cells
    text: str  # the cell's source as written
    start: int  # the line of the joined Python text where this cell begins (1-based)
    lines: int


@dataclass(frozen=True)
class Notebook:
    path: Path
    raw: str  # the file's text
    data: dict[str, Any]
    cells: list[Cell]  # the code cells that are linted
    source: str  # their Python, joined
    broken: list[tuple[Cell, SyntaxError]]  # cells left out because they do not parse

    def cell_at(self, line: int) -> Cell:
        return next(c for c in reversed(self.cells) if c.start <= line)

    def locate(self, finding: Finding) -> Finding:
        """The finding with its lines counted in its cell (edits too)."""
        cell = self.cell_at(finding.line)
        shift = cell.start - 1
        fix = finding.fix
        if fix is not None:
            fix = replace(fix, edits=[_shift_edit(e, -shift) for e in fix.edits])
        line, end_line = finding.line - shift, finding.end_line - shift
        return replace(finding, line=line, end_line=end_line, cell=cell.number, fix=fix)

    def unlocate(self, finding: Finding) -> Finding:
        """The finding with its lines counted in the joined Python text (for fixing)."""
        cell = next(c for c in self.cells if c.number == finding.cell)
        shift = cell.start - 1
        return replace(
            finding, line=finding.line + shift, end_line=finding.end_line + shift, cell=None
        )

    def with_edits(self, edits: list[Edit]) -> str:
        """The notebook's text with `edits` (in joined-text lines) applied to its cells."""
        by_cell: dict[int, list[Edit]] = {}
        for edit in edits:
            cell = self.cell_at(edit.row)
            by_cell.setdefault(cell.number, []).append(_shift_edit(edit, 1 - cell.start))
        data = copy.deepcopy(self.data)
        for cell in self.cells:
            if cell.number in by_cell:
                new = apply_edits(cell.text, by_cell[cell.number])
                stored = data["cells"][cell.number - 1]
                as_list = isinstance(stored["source"], list)
                stored["source"] = new.splitlines(True) if as_list else new
        return dump(data, self.raw)


def is_notebook(path: Path) -> bool:
    return path.suffix.lower() == SUFFIX


def read_notebook(path: Path, raw: str) -> Notebook:
    """Parse the notebook's JSON and join its Python cells; NotNotebook says why it cannot."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise NotNotebook(f"not a notebook: invalid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotNotebook("not a notebook: no list of cells")
    language = _language(data)
    if language not in ("python", ""):
        raise OtherLanguage(f"a {language} notebook, not Python")
    cells, broken, parts, start = [], [], [], 1
    for number, cell in enumerate(data["cells"], start=1):
        text = _cell_text(cell, number)
        python = cell_python(text) if text is not None else None
        if text is None or python is None:
            continue
        found = Cell(number, text, start, python.count("\n"))
        error = _syntax_error(python)
        if error is not None:
            broken.append((found, error))
            continue
        cells.append(found)
        parts.append(python)
        start += found.lines
    return Notebook(path, raw, data, cells, "".join(parts), broken)


def _language(data: dict[str, Any]) -> str:
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    info = metadata.get("language_info") or metadata.get("kernelspec") or {}  # type: ignore[union-attr]
    name = info.get("name", "") if isinstance(info, dict) else ""
    language = (info.get("language") or name) if isinstance(info, dict) else ""
    return "python" if str(language).lower().startswith("python") else str(language).lower()


def _cell_text(cell: object, number: int) -> str | None:
    """The source of a code cell (a string or a list of lines in the file); None otherwise."""
    if not isinstance(cell, dict) or cell.get("cell_type") != "code":
        return None
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise NotNotebook(f"not a notebook: cell {number} has no text source")


def cell_python(text: str) -> str | None:
    """A code cell's source as the Python to lint; None for a cell of another language."""
    first = text.lstrip().split("\n", 1)[0]
    if first.startswith("%%") and first[2:].split(" ", 1)[0].strip() not in PYTHON_CELL_MAGICS:
        return None
    python = python_lines(text)
    if _syntax_error(python) is not None and _syntax_error(text) is None:
        return text.rstrip("\n") + "\n"  # a `%` or `?` line inside brackets: Python after all
    return python


def python_lines(text: str) -> str:
    """The cell as Python: IPython-only lines (and their `\\` continuations) become `pass`;
    the text always ends with a newline so that the next cell starts on a line of its own."""
    out, continued = [], False
    for line in text.split("\n"):
        ipython = line.lstrip().startswith("%%") or IPYTHON_LINE_RE.match(line)
        if continued or (ipython and not _is_python(line)):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}pass")
            continued = line.rstrip().endswith("\\")
        else:
            out.append(line)
            continued = False
    return "\n".join(out).rstrip("\n") + "\n"


def _is_python(line: str) -> bool:
    """A line the regex took for IPython that parses as Python (`a = b % c` never matches;
    `x = y if z else w?` does not parse, so it stays IPython)."""
    stripped = line.strip()
    if stripped.startswith(("%", "!", "?")):
        return False
    try:
        ast.parse(stripped)
    except SyntaxError:
        return False
    return True


def _syntax_error(python: str) -> SyntaxError | None:
    try:
        ast.parse(python)
    except SyntaxError as exc:
        return exc
    except (ValueError, RecursionError, MemoryError) as exc:
        return SyntaxError(str(exc))
    return None


def _shift_edit(edit: Edit, lines: int) -> Edit:
    return replace(edit, row=edit.row + lines, end_row=edit.end_row + lines)


def apply_edits(text: str, edits: list[Edit]) -> str:
    """`text` with each edit applied; an edit inside another one (already part of the
    outer edit's content, as LibCST writes nested fixes) is skipped."""
    starts = _line_starts(text)
    where = {
        (_offset(starts, e.row, e.column), _offset(starts, e.end_row, e.end_column), e.content)
        for e in edits
    }
    spans = sorted(where, key=lambda s: (s[0], -s[1]))
    kept: list[tuple[int, int, str]] = []
    for span in spans:
        if kept and span[0] < kept[-1][1]:
            continue  # nested in the previous edit
        kept.append(span)
    for begin, end, content in reversed(kept):
        text = text[:begin] + content + text[end:]
    return text


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts


def _offset(starts: list[int], row: int, column: int) -> int:
    return starts[row - 1] + column - 1


def dump(data: dict[str, Any], raw: str) -> str:
    """The notebook as JSON written the way the file was (Jupyter: one-space indent, non-ASCII
    kept, a final newline), so that only the changed sources differ."""
    second = raw.split("\n", 2)[1] if raw.count("\n") >= 2 else ""
    indent = len(second) - len(second.lstrip(" ")) if raw.lstrip().startswith("{\n") else None
    ascii_only = raw.isascii() and "\\u" in raw
    text = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    return text + "\n" if raw.endswith("\n") else text
