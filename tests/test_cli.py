from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, run_ptgen
from packaging.version import Version
from typer.testing import CliRunner

from ptgen import __version__
from ptgen.cli import app
from ptgen.template_source import resolve_template

runner = CliRunner()


def test_version_names_ptgen_and_the_template_it_generates_from() -> None:
    """Issue 48: `ptgen 0.1.0` said nothing of the template (0.5.1) a project would get."""
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"ptgen {__version__} (template {resolve_template().version})"
    assert Version(__version__) >= Version("0.6.0")


def test_version_names_a_development_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A template on disk newer than the newest release: --version says the development
    version that `new project` records, not the release."""
    templates = tmp_path / "templates"
    shutil.copytree(REPO / "templates", templates)
    (templates / "project" / "a-local-change.txt").write_text("not released yet\n")
    monkeypatch.setenv("PTGEN_TEMPLATES_DIR", str(templates))
    monkeypatch.setenv("PTGEN_CACHE_DIR", str(tmp_path / "cache"))
    newest = resolve_template().version  # builds this cache, as any generating command does

    result = runner.invoke(app, ["--version"])

    assert result.exit_code == 0 and ".post" in newest
    assert result.output.strip() == f"ptgen {__version__} (template {newest})"


@pytest.mark.parametrize("option", ["--help", "--version"])
def test_help_and_version_do_not_import_heavy_modules(option: str) -> None:
    code = (
        "import sys; from ptgen.cli import app; from typer.testing import CliRunner;"
        f"r = CliRunner().invoke(app, ['{option}']); assert r.exit_code == 0, r.output;"
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
