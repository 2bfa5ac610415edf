"""Acceptance: the code every generated project starts from lints clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptgen.lint import LintConfig, lint_paths

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "project"


@pytest.mark.parametrize("folder", ["src", "tests"])
def test_project_templates_lint_clean(folder: str) -> None:
    root = TEMPLATES / folder
    files = [p for p in root.rglob("*.py")]  # .jinja files are not Python yet
    if folder == "src":
        assert len(files) >= 8  # the infrastructure modules are really linted
    findings = lint_paths(files, config=LintConfig()) if files else []
    assert [f"{f.path.name}:{f.line} {f.code} {f.message}" for f in findings] == []
