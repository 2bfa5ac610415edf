"""`ptgen lint` on the command line: formats, exit codes, fixing, options."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from ptgen.cli import app

runner = CliRunner()
BAD = 'import torch\n\ntorch.save(model, "m.pt")\nopt.zero_grad(set_to_none=False)\n'


def write(tmp_path: Path, text: str = BAD, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_text_output_and_exit_code(tmp_path: Path) -> None:
    path = write(tmp_path)
    result = runner.invoke(app, ["lint", str(path)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{path}:3:1: PGN401 `torch.save(model")
    assert lines[1].startswith(f"{path}:4:1: PGN504 [*] `zero_grad(set_to_none=False)`")
    assert "Found 2 findings." in result.output


def test_clean_file_exits_zero(tmp_path: Path) -> None:
    result = runner.invoke(app, ["lint", str(write(tmp_path, "x = 1\n"))])
    assert (result.exit_code, result.output.strip()) == (0, "All checks passed!")


def test_fail_on_and_exit_zero(tmp_path: Path) -> None:
    path = write(tmp_path, "opt.zero_grad(set_to_none=False)\n")  # an info finding
    assert runner.invoke(app, ["lint", str(path), "--fail-on", "warning"]).exit_code == 0
    assert runner.invoke(app, ["lint", str(path), "--exit-zero"]).exit_code == 0
    assert runner.invoke(app, ["lint", str(path)]).exit_code == 1


def test_json_output_has_ruff_fields(tmp_path: Path) -> None:
    path = write(tmp_path)
    result = runner.invoke(app, ["lint", str(path), "--output-format", "json"])
    rows = json.loads(result.output)
    assert [r["code"] for r in rows] == ["PGN401", "PGN504"]
    first, second = rows
    assert first["location"] == {"row": 3, "column": 1} and first["end_location"]["row"] == 3
    assert first["name"] == "save-whole-module" and first["filename"] == str(path)
    assert first["fix"]["applicability"] == "unsafe" and first["url"].endswith(
        "pgn401-save-whole-module"
    )
    edit = second["fix"]["edits"][0]
    assert edit["content"] == "opt.zero_grad()" and edit["location"] == {"row": 4, "column": 1}


def test_sarif_and_github_formats(tmp_path: Path) -> None:
    path = write(tmp_path)
    sarif = json.loads(runner.invoke(app, ["lint", str(path), "--output-format", "sarif"]).output)
    results = sarif["runs"][0]["results"]
    assert sarif["version"] == "2.1.0" and [r["ruleId"] for r in results] == ["PGN401", "PGN504"]
    assert results[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 3
    github = runner.invoke(app, ["lint", str(path), "--output-format", "github"]).output
    assert github.splitlines()[0].startswith(
        f"::warning title=ptgen lint (PGN401),file={path},line=3,col=1"
    )


def test_fix_diff_and_unsafe_fixes(tmp_path: Path) -> None:
    path = write(tmp_path)
    diff = runner.invoke(app, ["lint", str(path), "--diff"])
    assert "-opt.zero_grad(set_to_none=False)\n+opt.zero_grad()" in diff.output
    assert path.read_text(encoding="utf-8") == BAD
    result = runner.invoke(app, ["lint", str(path), "--fix"])
    assert result.exit_code == 1  # the unsafe one is left
    assert "opt.zero_grad()\n" in path.read_text(encoding="utf-8")
    result = runner.invoke(app, ["lint", str(path), "--fix", "--unsafe-fixes"])
    assert result.exit_code == 0
    assert 'torch.save(model.state_dict(), "m.pt")' in path.read_text(encoding="utf-8")


def test_select_ignore_and_bad_usage(tmp_path: Path) -> None:
    path = write(tmp_path)
    result = runner.invoke(app, ["lint", str(path), "--select", "PGN4,PGN5", "--ignore", "PGN504"])
    assert "PGN401" in result.output and "PGN504" not in result.output
    assert runner.invoke(app, ["lint", str(path), "--select", "TOR"]).exit_code == 2
    assert runner.invoke(app, ["lint", str(tmp_path / "missing.py")]).exit_code == 2
    assert runner.invoke(app, ["lint", str(path), "--target-torch", "new"]).exit_code == 2


def test_target_torch_option(tmp_path: Path) -> None:
    path = write(tmp_path, 'state = torch.load(p, map_location="cpu")\n')
    assert "PGN402" in runner.invoke(app, ["lint", str(path), "--target-torch", "2.4"]).output
    assert runner.invoke(app, ["lint", str(path), "--target-torch", "2.6"]).exit_code == 0


def test_syntax_error_file_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, "def f(:\n")
    result = runner.invoke(app, ["lint", str(path)])
    assert result.exit_code == 1 and "PGN001 syntax error" in result.output


def test_real_subprocess_lints_current_directory_by_default(tmp_path: Path) -> None:
    write(tmp_path)
    src = Path(__file__).resolve().parent.parent / "src"
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-m", "ptgen", "lint", "--select", "PGN401"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("train.py:3:1: PGN401")


def test_pre_commit_hook_definition() -> None:
    text = (Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text()
    assert "id: ptgen-lint" in text and "entry: ptgen lint" in text
    assert "language: python" in text and "types: [python]" in text


def test_statistics_counts_per_code(tmp_path: Path) -> None:
    text = BAD + "opt.zero_grad(set_to_none=False)\nx.cuda()\n"
    result = runner.invoke(app, ["lint", str(write(tmp_path, text)), "--statistics"])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "    2  PGN504  [*] zero-grad-set-to-none-false",
        "    1  PGN201  [ ] hardcoded-cuda",
        "    1  PGN401  [ ] save-whole-module",
    ]


def test_show_fixes_lists_each_fix_and_what_was_fixed(tmp_path: Path) -> None:
    path = write(tmp_path)
    shown = runner.invoke(app, ["lint", str(path), "--show-fixes"]).output.splitlines()
    at = shown.index(next(x for x in shown if "PGN504" in x))
    assert shown[at + 1] == "    fix (safe, applied by --fix): Remove `set_to_none=False`"
    assert shown[at + 2] == "      -> `opt.zero_grad()`"
    unsafe = shown.index(next(x for x in shown if "PGN401" in x))
    assert "fix (unsafe, needs --unsafe-fixes)" in shown[unsafe + 1]
    fixed = runner.invoke(app, ["lint", str(path), "--fix", "--show-fixes"])
    assert f"Fixed 1 finding:\n- {path}:\n    1 x PGN504 (zero-grad-set-to-none-false)" in (
        fixed.output
    )


def test_help_explains_the_new_options() -> None:
    result = runner.invoke(app, ["lint", "--help"], env={"COLUMNS": "200"})
    for option in ("--statistics", "--show-fixes", "--max-file-size"):
        assert option in result.output
    assert "PGN002" in result.output
