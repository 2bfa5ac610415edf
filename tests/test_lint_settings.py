"""`[tool.ptgen.lint]` settings per file: `per-file-ignores` and `extend-exclude`."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ptgen.cli import app

runner = CliRunner()
STEP = "opt.zero_grad(set_to_none=False)\n"  # PGN504
SETTINGS = """
[tool.ptgen.lint]
per-file-ignores = { "tests/*" = ["PGN5"], "conftest.py" = ["PGN504"], "**/gen/*.py" = ["PGN"] }
extend-exclude = ["scratch", "notes/old_*.py"]
"""


def tree(tmp_path: Path, settings: str = SETTINGS) -> Path:
    (tmp_path / "pyproject.toml").write_text(settings, encoding="utf-8")
    for name in [
        "train.py",
        "tests/test_step.py",
        "tests/deep/conftest.py",
        "gen/model.py",
        "pkg/gen/model.py",
        "scratch/try.py",
        "notes/old_run.py",
        "notes/new_run.py",
    ]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(STEP, encoding="utf-8")
    return tmp_path


def flagged(output: str, root: Path) -> list[str]:
    prefix = f"{root}/"
    return sorted(
        line.split(":")[0].removeprefix(prefix) for line in output.splitlines() if "PGN" in line
    )


def test_per_file_ignores_and_extend_exclude(tmp_path: Path) -> None:
    root = tree(tmp_path)
    result = runner.invoke(app, ["lint", str(root)])
    # tests/* matches tests/deep/conftest.py too (a `*` crosses folders, as in ruff)
    assert flagged(result.output, root) == ["notes/new_run.py", "train.py"]


def test_an_excluded_file_named_on_the_command_line_is_linted(tmp_path: Path) -> None:
    root = tree(tmp_path)
    result = runner.invoke(app, ["lint", str(root / "scratch" / "try.py")])
    assert flagged(result.output, root) == ["scratch/try.py"]
    ignored = runner.invoke(app, ["lint", str(root / "tests" / "test_step.py")])
    assert ignored.exit_code == 0 and ignored.output.strip() == "All checks passed!"


def test_per_file_ignores_apply_to_fixes(tmp_path: Path) -> None:
    root = tree(tmp_path)
    runner.invoke(app, ["lint", str(root), "--fix"])
    assert (root / "train.py").read_text(encoding="utf-8") == "opt.zero_grad()\n"
    assert (root / "tests" / "test_step.py").read_text(encoding="utf-8") == STEP


def test_bad_settings_are_one_line_errors(tmp_path: Path) -> None:
    root = tree(tmp_path, '[tool.ptgen.lint]\nper-file-ignores = { "tests/*" = "PGN5" }\n')
    result = runner.invoke(app, ["lint", str(root)])
    assert result.exit_code == 2 and "per-file-ignores: expected a table" in result.output
    root = tree(tmp_path, '[tool.ptgen.lint]\nper-file-ignores = { "tests/*" = ["XYZ9"] }\n')
    result = runner.invoke(app, ["lint", str(root)])
    assert result.exit_code == 2 and "'XYZ9' matches no lint rule" in result.output
    root = tree(tmp_path, "[tool.ptgen.lint]\nextend-exclude = 'scratch'\n")
    assert "extend-exclude: expected a list" in runner.invoke(app, ["lint", str(root)]).output
