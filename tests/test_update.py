"""`ptgen update`: template fixes reach existing projects, user edits survive, conflicts show.

Each test builds its own versioned template: a git repository holding a copy of ptgen's
project template, with releases recorded in templates/releases.toml as ptgen's release
step does, and points PTGEN_TEMPLATES_DIR at it. HOME is a fresh directory, so the
template cache lands in ~/.cache/ptgen and no git identity is configured.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import copier
import pytest
from typer.testing import CliRunner

from ptgen.cli import app
from ptgen.git import init_and_commit
from ptgen.paths import templates_dir
from ptgen.project import ProjectOptions, new_project
from ptgen.template_source import resolve_template
from ptgen.update import update_project

ENGINE = "src/{{package_name}}/engine.py.jinja"
NEW_FILE = "src/{{package_name}}/profiling.py"
TEMPLATE_FIX = "# engine fix from template 0.2.0\n"
TINY_TEMPLATE = {
    "copier.yml": "_answers_file: .copier-answers.yml\n_templates_suffix: .jinja\n"
    "_exclude: [copier.yml, .git]\npackage_name: {type: str, default: demo}\n",
    "{{_copier_conf.answers_file}}.jinja": "{{ _copier_answers|to_nice_yaml -}}\n",
    ENGINE: "".join(f"STEP_{i} = {i}\n" for i in range(12)),
}


def run_git(cwd: Path, *args: str) -> str:
    identity = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com"}
    identity |= {"GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"}
    env = {**os.environ, **identity}
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def commit_all(repo: Path, message: str) -> str:
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return run_git(repo, "rev-parse", "HEAD").strip()


def release(repo: Path, version: str) -> None:
    """Commit the template as it is and record that commit as `version` (the release step)."""
    sha = commit_all(repo, f"template for {version}")
    releases = repo / "templates" / "releases.toml"
    text = releases.read_text() if releases.exists() else "[releases]\n"
    releases.write_text(text + f'"{version}" = "{sha}"\n')
    commit_all(repo, f"release {version}")


def template_repo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str] | None = None
) -> Path:
    """A ptgen-like repository with templates/project released as 0.1.0.

    The template is a copy of ptgen's own (with its component templates), or the given
    `files` (a faster, tiny template).
    """
    repo = tmp_path / "ptgen-src"
    project = repo / "templates" / "project"
    if files is None:
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        for part in ("project", "model", "dataset", "_lib"):
            shutil.copytree(templates_dir() / part, repo / "templates" / part, ignore=ignore)
    for name, text in (files or {}).items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    run_git(repo, "init", "-q")
    release(repo, "0.1.0")
    monkeypatch.setenv("PTGEN_TEMPLATES_DIR", str(repo / "templates"))
    return repo


def release_second_version(repo: Path) -> None:
    """0.2.0 fixes the top of engine.py and adds a file."""
    engine = repo / "templates" / "project" / ENGINE
    engine.write_text(TEMPLATE_FIX + engine.read_text())
    (repo / "templates" / "project" / NEW_FILE).write_text('"""Profiling helpers."""\n')
    release(repo, "0.2.0")


def generate(tmp_path: Path) -> Path:
    """`ptgen new project demo` (without its smoke run) from the newest template."""
    result = new_project(ProjectOptions(name="demo"), tmp_path / "work", run_smoke=False)
    assert result.committed
    return result.path


def generate_tiny(tmp_path: Path) -> Path:
    """What `ptgen new project` does with a template, minus components: copy, then commit."""
    ref = resolve_template()
    project = tmp_path / "work" / "demo"
    copier.run_copy(ref.src_path, project, vcs_ref=ref.vcs_ref, defaults=True, quiet=True)
    assert init_and_commit(project, "generated")
    return project


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def snapshot(project: Path) -> dict[str, bytes]:
    """Every file of the project, .git included, by relative path."""
    return {str(p.relative_to(project)): p.read_bytes() for p in project.rglob("*") if p.is_file()}


@pytest.fixture(autouse=True)
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("PTGEN_CACHE_DIR", "XDG_CACHE_HOME", "GIT_CONFIG_GLOBAL"):
        monkeypatch.delenv(name, raising=False)
    return home


def test_update_brings_template_fix_and_keeps_user_edits(tmp_path, monkeypatch):
    repo = template_repo(tmp_path, monkeypatch)
    project = generate(tmp_path)
    added = CliRunner().invoke(app, ["add", "model", "mynet", "--project", str(project)])
    assert added.exit_code == 0, added.output
    pkg = project / "src" / "demo"
    with (pkg / "engine.py").open("a") as f:
        f.write("\n\ndef my_helper() -> int:\n    return 42\n")
    edit(pkg / "models" / "cnn.py", "import", "# my model tweak\nimport")
    edit(project / "configs" / "default.toml", "lr = ", "lr = 0.5  # mine, was ")
    commit_all(project, "my edits")
    user_files = ["src/demo/models/cnn.py", "src/demo/models/mynet.py", "configs/default.toml"]
    user_files += ["tests/test_model_mynet.py"]
    before = {path: (project / path).read_bytes() for path in user_files}
    release_second_version(repo)

    report = update_project(project)

    assert (report.from_version, report.to_version) == ("0.1.0", "0.2.0")
    assert report.conflicts == ()
    assert "src/demo/engine.py" in report.changed and "src/demo/profiling.py" in report.added
    engine = (pkg / "engine.py").read_text()
    assert engine.startswith(TEMPLATE_FIX) and engine.endswith("    return 42\n")
    assert (pkg / "profiling.py").read_text() == '"""Profiling helpers."""\n'
    assert {path: (project / path).read_bytes() for path in user_files} == before
    assert "_commit: v0.2.0" in (project / ".copier-answers.yml").read_text()


def test_conflicting_edit_is_reported_by_path_with_exit_1(tmp_path, monkeypatch):
    repo = template_repo(tmp_path, monkeypatch)
    project = generate(tmp_path)
    engine = project / "src" / "demo" / "engine.py"
    engine.write_text("# my own first line\n" + engine.read_text())
    commit_all(project, "my conflicting edit")
    release_second_version(repo)

    dry = CliRunner().invoke(app, ["update", str(project), "--dry-run"])
    assert "<<<<<<< " not in engine.read_text()
    result = CliRunner().invoke(app, ["update", str(project)])

    assert dry.exit_code == 1 and "1 file(s) would conflict" in dry.output
    assert result.exit_code == 1, result.output
    assert "conflict src/demo/engine.py" in " ".join(dry.output.split())
    assert "conflict src/demo/engine.py" in " ".join(result.output.split())
    assert "<<<<<<< " in engine.read_text()
    assert (project / "src" / "demo" / "profiling.py").is_file()


def test_dirty_project_is_refused_and_left_alone(tmp_path, monkeypatch):
    repo = template_repo(tmp_path, monkeypatch, TINY_TEMPLATE)
    project = generate_tiny(tmp_path)
    (project / "notes.txt").write_text("work in progress\n")
    release_second_version(repo)
    before = snapshot(project)

    result = CliRunner().invoke(app, ["update", str(project)])

    assert result.exit_code == 1
    assert "uncommitted changes (notes.txt)" in result.output
    assert snapshot(project) == before


def test_dry_run_reports_and_changes_nothing(tmp_path, monkeypatch):
    repo = template_repo(tmp_path, monkeypatch, TINY_TEMPLATE)
    project = generate_tiny(tmp_path)
    release_second_version(repo)
    before = snapshot(project)

    result = CliRunner().invoke(app, ["update", str(project), "--dry-run"])

    assert result.exit_code == 0, result.output
    lines = [" ".join(line.split()) for line in result.output.splitlines()]
    assert "Would update demo: template 0.1.0 -> 0.2.0" in lines
    assert {"changed src/demo/engine.py", "added src/demo/profiling.py"} <= set(lines)
    assert snapshot(project) == before


def test_to_version_and_up_to_date(tmp_path, monkeypatch):
    repo = template_repo(tmp_path, monkeypatch, TINY_TEMPLATE)
    project = generate_tiny(tmp_path)
    release_second_version(repo)
    (repo / "templates" / "project" / "NOTES.md").write_text("unreleased\n")  # a dev commit

    assert update_project(project, to_version="0.1.0").up_to_date
    report = update_project(project, to_version="v0.2.0")

    assert report.to_version == "0.2.0" and not (project / "NOTES.md").exists()
    commit_all(project, "update to 0.2.0")
    result = CliRunner().invoke(app, ["update", str(project), "--to", "9.9.9"])
    assert result.exit_code == 1 and "unknown template version '9.9.9'" in result.output


def test_generated_project_is_committed_with_portable_answers(tmp_path, monkeypatch):
    template_repo(tmp_path, monkeypatch)
    project = generate(tmp_path)

    answers = (project / ".copier-answers.yml").read_text()

    assert "_src_path: ~/.cache/ptgen/template\n" in answers
    assert "_commit: v0.1.0\n" in answers
    assert str(tmp_path) not in answers and ": /" not in answers
    assert run_git(project, "status", "--porcelain") == ""


def test_plain_copier_update_works_offline_from_the_cache(tmp_path, monkeypatch):
    repo = template_repo(tmp_path, monkeypatch)
    project = generate(tmp_path)
    release_second_version(repo)
    resolve_template()  # any ptgen command refreshes the cache; `copier update` needs it fresh

    copier = [shutil.which("copier") or "copier", "update", "--trust", "--defaults", "--quiet"]
    proc = subprocess.run(copier, cwd=project, capture_output=True, text=True)

    assert proc.returncode == 0, proc.stderr
    assert (project / "src" / "demo" / "engine.py").read_text().startswith(TEMPLATE_FIX)
    assert "_commit: v0.2.0" in (project / ".copier-answers.yml").read_text()


def test_downgrade_and_non_git_project_are_clear_errors(tmp_path, monkeypatch):
    repo = template_repo(tmp_path, monkeypatch, TINY_TEMPLATE)
    release_second_version(repo)
    project = generate_tiny(tmp_path)
    copied = shutil.copytree(project, tmp_path / "no-git", ignore=shutil.ignore_patterns(".git"))

    downgrade = CliRunner().invoke(app, ["update", str(project), "--to", "0.1.0"])
    no_git = CliRunner().invoke(app, ["update", str(copied)])

    assert downgrade.exit_code == 1 and "downgrading from 0.2.0 to 0.1.0" in downgrade.output
    assert no_git.exit_code == 1 and "is not in a git repository" in no_git.output
    assert run_git(project, "status", "--porcelain") == ""
