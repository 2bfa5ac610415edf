"""Bad names are refused before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ptgen.cli import app
from ptgen.errors import InvalidName
from ptgen.options import component_name, package_name

runner = CliRunner()

BAD_PROJECT_NAMES = [
    "",
    "   ",
    "class",  # keyword
    "match",  # soft keyword
    "1project",  # leading digit
    "a/b",
    "..",
    "../escape",
    "/abs/path",
    "with space",
    "tab\tname",
    "x" * 300,
    "torch",  # shadows torch
    "json",  # shadows the standard library
    "Os",  # lower-cases to a standard-library module
    "naïve",  # non-ASCII
    "proj.name",
    "_private",
]


@pytest.mark.parametrize("name", BAD_PROJECT_NAMES)
def test_bad_project_names_are_refused_and_nothing_is_written(name: str, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["new", "project", name, "--output-dir", str(tmp_path), "--no-smoke"]
    )
    assert result.exit_code == 1, result.output
    assert result.output.count("\n") == 1 and result.output.startswith("error:")
    assert list(tmp_path.iterdir()) == []


def test_name_starting_with_dash_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["new", "project", "-x", "--output-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "package"), [("my-proj", "my_proj"), ("MyProj", "myproj"), ("a1_b-2", "a1_b_2")]
)
def test_good_names_give_a_package(name: str, package: str) -> None:
    assert package_name(name) == package


@pytest.mark.parametrize("name", ["Model", "with-dash", "1x", "def", "match", "_x", "", "a" * 65])
def test_bad_component_names(name: str) -> None:
    with pytest.raises(InvalidName):
        component_name(name)
