from __future__ import annotations

import subprocess
import sys

from helpers import run_ptgen
from typer.testing import CliRunner

from ptgen import __version__
from ptgen.cli import app

runner = CliRunner()


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"ptgen {__version__}"


def test_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys; from ptgen.cli import app; from typer.testing import CliRunner;"
        "r = CliRunner().invoke(app, ['--help']); assert r.exit_code == 0, r.output;"
        "print(sorted(m for m in ('torch', 'copier', 'black', 'libcst') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_command_has_help_with_an_example() -> None:
    commands = [
        ["new", "project"],
        ["add", "model"],
        ["add", "dataset"],
        ["smoke"],
        ["list"],
        ["update"],
        ["lint"],
    ]
    for args in commands:
        result = runner.invoke(app, [*args, "--help"])
        assert result.exit_code == 0, args
        assert "Example" in result.output and f"ptgen {args[0]}" in result.output, args


def test_list_shows_kinds_per_task() -> None:
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0
    assert "cnn" in result.output and "image-classification" in result.output
    assert "hf-encoder" in result.output and "hf-text" in result.output  # issue 16


def test_python_dash_m_entry_point() -> None:
    result = run_ptgen("--version")
    assert result.returncode == 0 and __version__ in result.stdout


def test_unknown_option_is_a_usage_error() -> None:
    result = runner.invoke(app, ["new", "project", "x", "--bogus"])
    assert result.exit_code == 2
