"""Notebooks: does linting `.ipynb` files find what linting the same code as `.py` finds?

Each notebook under `--tree` is exported to a `.py` file the way jupytext's percent format
writes one (a `# %%` line per code cell, IPython magics and shell lines commented out,
cells that run another language commented whole); both are linted; a finding of the
export counts as found when the notebook has the same code in the same cell and line.
Then `--fix` runs on a copy of every notebook, which must read back with nbformat and
whose code cells must all still compile.

    PYTHONPATH=src python bench/bench_lint_notebooks.py --tree DIR --json /tmp/nb.json

Needs nbformat (the `notebook` extra).
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

import nbformat

from ptgen.lint import LintConfig, fix_paths, lint_paths
from ptgen.lint.notebook import cell_python

CELL_MARK = "# %%"


def export(notebook: Path, out: Path) -> dict[int, tuple[int, int]]:
    """Write the notebook's code as .py; returns {py line: (cell, line in cell)}."""
    cells = nbformat.read(notebook, as_version=4).cells
    lines, where = [], {}
    for number, cell in enumerate(cells, start=1):
        if cell.cell_type != "code":
            continue
        lines.append(CELL_MARK)
        text = cell.source.split("\n")
        other_language = text[0].startswith("%%") and text[0][2:].split()[0] not in ("time",)
        for index, line in enumerate(text, start=1):
            magic = line.lstrip().startswith(("%", "!")) or other_language
            lines.append(f"# {line}" if magic else line)
            where[len(lines)] = (number, index)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return where


def compare(tree: Path, work: Path, config: LintConfig) -> dict[str, object]:
    found_py: Counter[tuple[str, str, int, int]] = Counter()
    found_nb: Counter[tuple[str, str, int, int]] = Counter()
    notebooks = sorted(tree.rglob("*.ipynb"))
    for index, notebook in enumerate(notebooks):
        py = work / f"{index:03d}_{notebook.stem}.py"
        where = export(notebook, py)
        for f in lint_paths([py], config=config):
            if f.line in where:  # the `# %%` lines hold no code
                found_py[(str(notebook), f.code, *where[f.line])] += 1
    started = time.perf_counter()
    for f in lint_paths(notebooks, config=config):
        found_nb[(str(f.path), f.code, f.cell or 0, f.line)] += 1
    seconds = time.perf_counter() - started
    matched = sum((found_py & found_nb).values())
    total = sum(found_py.values())
    return {
        "notebooks": len(notebooks),
        "findings_py": total,
        "findings_ipynb": sum(found_nb.values()),
        "matched": matched,
        "recall": matched / total if total else 1.0,
        "missed": sorted(str(k) for k in (found_py - found_nb)),
        "lint_seconds_ipynb": round(seconds, 3),
    }


def check_fixes(tree: Path, work: Path, config: LintConfig) -> dict[str, object]:
    copy = work / "fixed"
    shutil.copytree(tree, copy)
    results = fix_paths([copy], config=config)
    broken = []
    for result in results:
        cells = nbformat.read(result.path, as_version=4).cells  # raises if not valid JSON
        nbformat.validate(nbformat.read(result.path, as_version=4))
        for cell in cells:
            try:
                ast.parse(cell_python(cell.source) or "" if cell.cell_type == "code" else "")
            except SyntaxError:
                broken.append(str(result.path))
    applied = sum(len(r.applied) for r in results)
    return {"notebooks_fixed": len(results), "fixes_applied": applied, "broken_cells": broken}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, required=True, help="a folder of notebooks")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    config = LintConfig(ignore=["PGN001", "PGN002"])  # file-level findings have no twin
    with tempfile.TemporaryDirectory() as tmp:
        result = compare(args.tree, Path(tmp), config) | check_fixes(args.tree, Path(tmp), config)
    for key, value in result.items():
        if key != "missed":
            print(f"{key:20s} {value}")
    for missed in result["missed"]:  # type: ignore[attr-defined]
        print("  missed:", missed)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
