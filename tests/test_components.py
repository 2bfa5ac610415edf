"""`ptgen add`: plans, conflicts, dry runs, and byte-identical components."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import generate, run_in_project, tree_snapshot
from typer.testing import CliRunner

from ptgen.cli import app
from ptgen.components import add_component
from ptgen.errors import ConflictError, NotAProject, PtgenError

runner = CliRunner()


def test_component_written_at_new_is_identical_to_one_added_later(
    default_project: Path, tmp_path: Path
) -> None:
    project = generate(tmp_path, name="demo-proj", dataset="synthetic")
    (project / "src/demo_proj/models/cnn.py").unlink()
    (project / "tests/test_model_cnn.py").unlink()
    add_component(project, "model", "cnn", "cnn")
    for rel in ("src/demo_proj/models/cnn.py", "tests/test_model_cnn.py"):
        assert (project / rel).read_bytes() == (default_project / rel).read_bytes()


def test_add_is_discovered_without_editing_any_file(tmp_path: Path) -> None:
    project = generate(tmp_path, name="demo-proj")
    before = tree_snapshot(project)
    result = runner.invoke(
        app, ["add", "model", "second", "--kind", "cnn", "--project", str(project)]
    )
    assert result.exit_code == 0, result.output
    after = tree_snapshot(project)
    assert {k for k in after if k not in before} == {
        "src/demo_proj/models/second.py",
        "tests/test_model_second.py",
    }
    assert all(after[k] == v for k, v in before.items())
    listing = run_in_project(
        project, "-c", 'from demo_proj.config import available; print(available("model"))'
    )
    assert "second" in listing.stdout, listing.stderr


def test_dry_run_leaves_the_tree_byte_identical(tmp_path: Path) -> None:
    project = generate(tmp_path, name="demo-proj")
    before = tree_snapshot(project)
    result = runner.invoke(app, ["add", "dataset", "more", "--project", str(project), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "create    src/demo_proj/data/more.py" in result.output
    assert tree_snapshot(project) == before


def test_second_add_refuses_and_keeps_the_users_edit(tmp_path: Path) -> None:
    project = generate(tmp_path, name="demo-proj")
    module = project / "src/demo_proj/models/cnn.py"
    module.write_text(module.read_text(encoding="utf-8") + "# my edit\n", encoding="utf-8")
    result = runner.invoke(app, ["add", "model", "cnn", "--project", str(project)])
    assert result.exit_code == 1 and "--force" in result.output
    assert module.read_text(encoding="utf-8").endswith("# my edit\n")
    dry = runner.invoke(
        app, ["add", "model", "cnn", "--project", str(project), "--dry-run", "--force"]
    )
    assert "-# my edit" in dry.output  # the diff shows what --force would drop
    forced = runner.invoke(app, ["add", "model", "cnn", "--project", str(project), "--force"])
    assert forced.exit_code == 0
    assert "# my edit" not in module.read_text(encoding="utf-8")


def test_outside_a_project_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotAProject):
        add_component(tmp_path, "model", "net")


def test_incompatible_kind_lists_the_compatible_ones(default_project: Path) -> None:
    with pytest.raises(PtgenError, match="cnn"):
        add_component(default_project, "model", "net", "rnn", dry_run=True)
    with pytest.raises(PtgenError, match="sequence-classification"):
        add_component(
            default_project, "dataset", "seq", "synthetic", variable_length=True, dry_run=True
        )


def test_conflict_error_is_a_ptgen_error() -> None:
    assert issubclass(ConflictError, PtgenError)
