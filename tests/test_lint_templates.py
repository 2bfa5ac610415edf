"""Acceptance: the code every generated project starts from lints clean."""

from __future__ import annotations

import pytest

from ptgen.lint import LintConfig, lint_paths


@pytest.mark.parametrize("project", ["default_project", "full_project"])
@pytest.mark.parametrize("folder", ["src", "tests"])
def test_generated_projects_lint_clean(
    request: pytest.FixtureRequest, project: str, folder: str
) -> None:
    """The default project and the one with every feature, as rendered (the templates
    are Jinja): every infrastructure module and test."""
    root = request.getfixturevalue(project) / folder
    files = list(root.rglob("*.py"))
    assert len(files) >= (18 if folder == "src" else 5)  # really linted
    findings = lint_paths(files, config=LintConfig())
    assert [f"{f.path.name}:{f.line} {f.code} {f.message}" for f in findings] == []
