"""`ptgen lint` on Jupyter notebooks: cells, magics, noqa, fixes, damaged files, real notebooks."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import nbformat
from typer.testing import CliRunner

from ptgen.cli import app
from ptgen.lint import LintConfig, fix_paths, lint_paths
from ptgen.lint.notebook import cell_python, python_lines

runner = CliRunner()
REAL = Path(__file__).parent / "data" / "notebooks"
IMPORTS = (
    "%matplotlib inline\nimport torch\nfrom torch.utils.data import DataLoader\n"
    "!pip install -q torchvision"
)
LOADER = (
    "loader = DataLoader(ds, num_workers=0, persistent_workers=True)\n"
    'state = torch.load("m.pt", weights_only=True)'
)
HELP_AND_STEP = "torch.load?\nopt.zero_grad(set_to_none=False)"
OTHER_LANGUAGE = "%%bash\nopt.zero_grad(set_to_none=False)"
TIMED = "%%time\nopt.zero_grad(set_to_none=False)"


def notebook(tmp_path: Path, *sources: str, name: str = "course.ipynb") -> Path:
    """A notebook with a markdown cell first, then one code cell per source (with an output)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Py"}
    nb.cells = [nbformat.v4.new_markdown_cell("# A course")]
    for source in sources:
        cell = nbformat.v4.new_code_cell(source)
        cell.outputs = [nbformat.v4.new_output("stream", text="ran\n")]
        nb.cells.append(cell)
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


def where(path: Path) -> list[tuple[str, int | None, int]]:
    return [(f.code, f.cell, f.line) for f in lint_paths([path], config=LintConfig())]


def test_findings_in_several_cells_are_located_in_their_cell(tmp_path: Path) -> None:
    path = notebook(tmp_path, IMPORTS, LOADER, HELP_AND_STEP)
    assert where(path) == [
        ("PGN105", 3, 1),
        ("PGN501", 3, 1),
        ("PGN403", 3, 2),
        ("PGN504", 4, 2),
    ]
    result = runner.invoke(app, ["lint", str(path)])
    assert result.exit_code == 1
    assert result.output.splitlines()[0].startswith(f"{path}:cell 3:1:10: PGN105 [*]")
    assert f"{path}:cell 4:2:1: PGN504" in result.output


def test_magics_shell_and_help_lines_are_skipped(tmp_path: Path) -> None:
    indented_shell = (
        "try:\n    import torchmetrics\nexcept ImportError:\n    !pip install torchmetrics"
    )
    files = "files = !ls\nsize = %sx du -s\nx = 10 % 3"
    path = notebook(tmp_path, IMPORTS, indented_shell, files, OTHER_LANGUAGE, TIMED)
    # %%bash runs another language: not linted; %%time runs its body as Python: linted
    assert where(path) == [("PGN504", 6, 2)]
    assert python_lines("    !pip install x \\\n      y\nz = 1") == "    pass\n      pass\nz = 1\n"


def test_noqa_in_a_cell(tmp_path: Path) -> None:
    step = "opt.zero_grad(set_to_none=False)"
    path = notebook(tmp_path, f"{step}  # noqa: PGN504", f"{step}  # noqa: PGN1", step)
    assert where(path) == [("PGN504", 3, 1), ("PGN504", 4, 1)]


def test_fix_rewrites_only_the_code_it_fixes(tmp_path: Path) -> None:
    path = notebook(tmp_path, IMPORTS, LOADER, HELP_AND_STEP)
    before = nbformat.read(path, as_version=4)
    raw = path.read_text(encoding="utf-8")
    result = runner.invoke(app, ["lint", str(path), "--fix", "--show-fixes"])
    assert "Fixed 2 findings" in result.output and "1 x PGN105" in result.output
    after = nbformat.read(path, as_version=4)
    nbformat.validate(after)
    assert after.cells[2].source.startswith("loader = DataLoader(ds, num_workers=0)\n")
    assert after.cells[3].source == "torch.load?\nopt.zero_grad()"
    assert [c.get("outputs") for c in after.cells] == [c.get("outputs") for c in before.cells]
    assert after.metadata == before.metadata and after.cells[1] == before.cells[1]
    old, new = raw.splitlines(), path.read_text(encoding="utf-8").splitlines()
    assert len(old) == len(new) and sum(a != b for a, b in zip(old, new, strict=True)) == 2
    assert where(path) == [("PGN501", 3, 1), ("PGN403", 3, 2)]


def test_json_sarif_and_github_carry_the_cell(tmp_path: Path) -> None:
    path = notebook(tmp_path, IMPORTS, LOADER)
    rows = json.loads(runner.invoke(app, ["lint", str(path), "--output-format", "json"]).output)
    first = rows[0]
    assert (first["cell"], first["location"], first["code"]) == (
        3,
        {"row": 1, "column": 10},
        "PGN105",
    )
    edit = first["fix"]["edits"][0]
    assert (edit["location"]["row"], edit["content"]) == (1, "DataLoader(ds, num_workers=0)")
    sarif = json.loads(runner.invoke(app, ["lint", str(path), "--output-format", "sarif"]).output)
    result = sarif["runs"][0]["results"][0]
    assert result["properties"] == {"cell": 3}
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 1
    github = runner.invoke(app, ["lint", str(path), "--output-format", "github"]).output
    assert "line=1,col=10" in github and "PGN105 (cell 3, line 1) " in github


def test_a_damaged_notebook_is_one_finding_and_the_run_goes_on(tmp_path: Path) -> None:
    good = notebook(tmp_path, LOADER, name="b.ipynb")
    damaged = tmp_path / "a.ipynb"
    damaged.write_text('{"cells": [', encoding="utf-8")
    result = runner.invoke(app, ["lint", str(tmp_path)])
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{damaged}:1:1: PGN001 not a notebook: invalid JSON")
    assert any(line.startswith(f"{good}:cell 2:1:10: PGN105") for line in lines)
    fixed = runner.invoke(app, ["lint", str(tmp_path), "--fix"])
    assert "Fixed 1 finding." in fixed.output and damaged.read_text() == '{"cells": ['


def test_a_cell_that_does_not_parse_leaves_the_others_linted(tmp_path: Path) -> None:
    path = notebook(tmp_path, "def broken(:\n    pass", HELP_AND_STEP)
    assert where(path) == [("PGN001", 2, 1), ("PGN504", 3, 2)]


def test_files_not_read_are_never_all_checks_passed(tmp_path: Path) -> None:
    r_notebook = notebook(tmp_path, "x <- 1", name="analysis.ipynb")
    data = json.loads(r_notebook.read_text())
    data["metadata"]["kernelspec"] = {"name": "ir", "language": "R", "display_name": "R"}
    r_notebook.write_text(json.dumps(data))
    notebook(tmp_path, "import torch", name="clean.ipynb")
    result = runner.invoke(app, ["lint", str(tmp_path), "--ignore", "PGN002"])
    assert "All checks passed!" not in result.output
    assert "Checked 1 file; skipped 1 (not read):" in result.output
    assert f"{r_notebook}: not checked: a r notebook, not Python" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["lint", str(empty)])
    assert result.output.strip() == "No Python files or notebooks found to check."


def test_real_notebooks_match_their_export_and_stay_valid_when_fixed(tmp_path: Path) -> None:
    """The course's notebooks: what linting their code exported as .py finds, the notebook
    finds too; --fix keeps them valid with their outputs, and every code cell compiles."""
    shutil.copytree(REAL, tmp_path / "nb")
    notebooks = sorted((tmp_path / "nb").glob("*.ipynb"))
    for path in notebooks:
        exported, lines = _export(path, tmp_path / f"{path.stem}.py")
        from_py = {(f.code, *lines[f.line]) for f in lint_paths([exported], config=LintConfig())}
        assert from_py and from_py <= set(where(path))
    before = [nbformat.read(p, as_version=4) for p in notebooks]
    raw = [p.read_text(encoding="utf-8").splitlines() for p in notebooks]
    assert sum(len(r.applied) for r in fix_paths(notebooks, config=LintConfig())) == 1
    after = [p.read_text(encoding="utf-8").splitlines() for p in notebooks]
    changed = [
        sum(a != b for a, b in zip(x, y, strict=True)) for x, y in zip(raw, after, strict=True)
    ]
    assert changed == [0, 1]  # the pretrained= line; every other byte as Jupyter wrote it
    for path, old in zip(notebooks, before, strict=True):
        new = nbformat.read(path, as_version=4)
        nbformat.validate(new)
        assert [c.get("outputs") for c in new.cells] == [c.get("outputs") for c in old.cells]
        python = [cell_python(c.source) for c in new.cells if c.cell_type == "code"]
        for source in python:
            ast.parse(source or "")


def _export(path: Path, out: Path) -> tuple[Path, dict[int, tuple[int, int]]]:
    """The code cells as one .py file (jupytext's way: magics and %% cells commented out)."""
    lines: list[str] = []
    where_from: dict[int, tuple[int, int]] = {}
    for number, cell in enumerate(nbformat.read(path, as_version=4).cells, start=1):
        if cell.cell_type != "code":
            continue
        whole = cell.source.startswith("%%")
        for index, line in enumerate(cell.source.split("\n"), start=1):
            magic = whole or line.lstrip().startswith(("%", "!"))
            lines.append(f"# {line}" if magic else line)
            where_from[len(lines)] = (number, index)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out, where_from
