"""`ptgen new project`: files, options, conflicts, dry runs, hostile text, formatting."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest
import tomllib
import yaml
from helpers import generate, tree_snapshot
from typer.testing import CliRunner

from ptgen.cli import app

runner = CliRunner()

CONTRACT_FILES = [
    "pyproject.toml",
    "README.md",
    ".copier-answers.yml",
    ".gitignore",
    "configs/default.toml",
    "src/demo_proj/__main__.py",
    "src/demo_proj/cli.py",
    "src/demo_proj/config.py",
    "src/demo_proj/runtime.py",
    "src/demo_proj/engine.py",
    "src/demo_proj/checkpoint.py",
    "src/demo_proj/train.py",
    "src/demo_proj/models/cnn.py",
    "src/demo_proj/data/synthetic.py",
    "tests/test_model_cnn.py",
    "tests/test_data_synthetic.py",
]


def test_layout_follows_the_contract(default_project: Path) -> None:
    for rel in CONTRACT_FILES:
        assert (default_project / rel).is_file(), rel


def test_project_is_a_committed_git_repo(default_project: Path) -> None:
    status = subprocess.run(
        ["git", "status", "--porcelain"],
        cwd=default_project,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""
    log = subprocess.run(
        ["git", "log", "--oneline"], cwd=default_project, capture_output=True, text=True
    )
    assert log.stdout.count("\n") == 1


def test_generated_code_is_black_and_ruff_clean(default_project: Path) -> None:
    subprocess.run(["black", "--check", "-q", "."], cwd=default_project, check=True)
    subprocess.run(["ruff", "check", "-q", "."], cwd=default_project, check=True)


def test_generated_code_follows_the_guide(default_project: Path) -> None:
    for path in default_project.rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in (
                node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")]
            )
        }
        assert "ptgen" not in imported, path
        assert ".cuda()" not in source, path
        assert "torchvision" not in imported, path


def test_answers_file_has_no_absolute_path(default_project: Path) -> None:
    text = (default_project / ".copier-answers.yml").read_text(encoding="utf-8")
    answers = yaml.safe_load(text)
    assert answers["package_name"] == "demo_proj"
    assert str(Path.home()) not in text and "/tmp" not in text


@pytest.mark.parametrize(
    "text",
    [
        'He said "hi" \\ and left',
        "{{ jinja }} {% if x %} {# c #}",
        "triple '''quotes''' and \"\"\"more\"\"\"",
        "line one\nline two",
        "Café, 東京, Ελλάδα",
    ],
)
def test_free_text_comes_out_verbatim(tmp_path: Path, text: str) -> None:
    project = generate(tmp_path, name="demo-proj", description=text, author=text)
    meta = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert meta["description"] == text
    assert meta["authors"][0]["name"] == text
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text(encoding="utf-8"))
    assert answers["description"] == text


def test_options_flow_into_the_config(tmp_path: Path) -> None:
    project = generate(tmp_path, name="fast", amp=True, compile=True, grad_checkpointing=True)
    config = tomllib.loads((project / "configs/default.toml").read_text(encoding="utf-8"))
    assert config["train"]["amp"] is True
    assert config["train"]["compile"] is True
    assert config["model"]["grad_checkpointing"] is True


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["new", "project", "demo", "-o", str(tmp_path / "out"), "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    assert "src/demo/train.py" in result.output
    assert not (tmp_path / "out").exists()


def test_existing_directory_is_refused_without_force(tmp_path: Path) -> None:
    target = tmp_path / "demo"
    target.mkdir()
    (target / "notes.txt").write_text("mine", encoding="utf-8")
    before = tree_snapshot(tmp_path)
    result = runner.invoke(app, ["new", "project", "demo", "-o", str(tmp_path), "--no-smoke"])
    assert result.exit_code == 1 and "--force" in result.output
    assert tree_snapshot(tmp_path) == before


def test_force_writes_into_an_existing_directory_and_keeps_other_files(tmp_path: Path) -> None:
    target = tmp_path / "demo"
    target.mkdir()
    (target / "notes.txt").write_text("mine", encoding="utf-8")
    result = runner.invoke(
        app, ["new", "project", "demo", "-o", str(tmp_path), "--no-smoke", "--force"]
    )
    assert result.exit_code == 0, result.output
    assert (target / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert (target / "src/demo/train.py").is_file()


def test_target_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "demo").write_text("a file", encoding="utf-8")
    result = runner.invoke(
        app, ["new", "project", "demo", "-o", str(tmp_path), "--no-smoke", "--force"]
    )
    assert result.exit_code == 1 and "not a directory" in result.output
    assert (tmp_path / "demo").read_text(encoding="utf-8") == "a file"


def test_read_only_output_dir_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        result = runner.invoke(
            app, ["new", "project", "demo", "-o", str(locked / "sub"), "--no-smoke"]
        )
        if result.exit_code == 0:  # root ignores permissions: then it must simply work
            assert (locked / "sub" / "demo" / "pyproject.toml").is_file()
        else:
            assert result.exit_code == 1 and "cannot write" in result.output
            assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


def test_failure_mid_generation_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure after Copier wrote the infrastructure (here: rendering a component)."""
    import ptgen.project

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected failure")

    monkeypatch.setattr(ptgen.project, "plan_component", broken)
    with pytest.raises(RuntimeError, match="injected"):
        generate(tmp_path / "out", name="demo")
    assert not (tmp_path / "out").exists()  # not even the output directory it created


def test_unknown_kind_lists_the_kinds_that_fit(tmp_path: Path) -> None:
    result = runner.invoke(app, ["new", "project", "demo", "-o", str(tmp_path), "--model", "nope"])
    assert result.exit_code == 1 and "cnn" in result.output
    assert list(tmp_path.iterdir()) == []


def test_generation_is_deterministic(tmp_path: Path) -> None:
    a = tree_snapshot(generate(tmp_path / "a", name="demo"))
    b = tree_snapshot(generate(tmp_path / "b", name="demo"))
    strip = {k: v for k, v in a.items() if not k.startswith(".git/")}
    assert strip == {k: v for k, v in b.items() if not k.startswith(".git/")}


def test_generated_project_is_ptgen_lint_clean(default_project: Path) -> None:
    from ptgen.lint import lint_paths

    findings = lint_paths([default_project])
    assert findings == [], [f"{f.path}:{f.line} {f.code} {f.message}" for f in findings]
