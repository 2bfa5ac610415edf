"""The versioned template history: releases from committed data, a dev commit, the bundle.

Each test builds a small ptgen-like repository (templates/project + templates/releases.toml)
and a fresh HOME, so the cache is ~/.cache/ptgen/template and no git identity exists.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import copier
import pytest

from ptgen.template_source import (
    TemplateSource,
    TemplateSourceError,
    UnknownVersion,
    build_bundle,
    cache_repo,
    default_source,
    resolve_template,
)

SRC = str(Path(__file__).resolve().parents[1] / "src")
COPIER_YML = """\
_answers_file: .copier-answers.yml
_templates_suffix: .jinja
_exclude: [copier.yml, .git]
name: {type: str, default: demo}
"""
ANSWERS = "{{ _copier_answers|to_nice_yaml -}}\n"


def run_git(cwd: Path, *args: str) -> str:
    identity = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com"}
    identity |= {"GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"}
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **identity}, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def write_template(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = repo / "templates" / "project" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def release(repo: Path, version: str, files: dict[str, str]) -> str:
    """Write `files` into the template, commit, and record the commit as `version`."""
    write_template(repo, files)
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", f"template {version}")
    sha = run_git(repo, "rev-parse", "HEAD").strip()
    releases = repo / "templates" / "releases.toml"
    text = releases.read_text() if releases.exists() else "[releases]\n"
    releases.write_text(text + f'"{version}" = "{sha}"\n')
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", f"release {version}")
    return sha


def two_releases(tmp_path: Path) -> TemplateSource:
    repo = tmp_path / "ptgen-src"
    repo.mkdir()
    run_git(repo, "init", "-q")
    base = {"copier.yml": COPIER_YML, "{{_copier_conf.answers_file}}.jinja": ANSWERS}
    release(repo, "0.1.0", {**base, "engine.py": "VERSION = 1\n"})
    release(repo, "0.2.0", {"engine.py": "VERSION = 2\n", "new.py": "NEW = True\n"})
    return TemplateSource(repo / "templates")


def tags(repo: Path) -> dict[str, str]:
    out = run_git(repo, "show-ref", "--tags", "--dereference") if run_git(repo, "tag") else ""
    return {
        ref.removeprefix("refs/tags/"): sha
        for sha, ref in (line.split() for line in out.splitlines())
    }


@pytest.fixture(autouse=True)
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("PTGEN_CACHE_DIR", "PTGEN_TEMPLATES_DIR", "XDG_CACHE_HOME", "GIT_CONFIG_GLOBAL"):
        monkeypatch.delenv(name, raising=False)
    return home


def test_releases_become_tags_and_copies_record_the_version(tmp_path):
    source = two_releases(tmp_path)

    newest, first = resolve_template(source=source), resolve_template("0.1.0", source=source)
    copier.run_copy(
        first.src_path, tmp_path / "p", vcs_ref=first.vcs_ref, defaults=True, quiet=True
    )

    assert newest.src_path == first.src_path == "~/.cache/ptgen/template"
    assert (newest.vcs_ref, newest.version, first.vcs_ref) == ("v0.2.0", "0.2.0", "v0.1.0")
    assert set(tags(cache_repo())) == {"v0.1.0", "v0.2.0"}
    assert (tmp_path / "p" / "engine.py").read_text() == "VERSION = 1\n"
    answers = (tmp_path / "p" / ".copier-answers.yml").read_text()
    assert "_commit: v0.1.0\n_src_path: ~/.cache/ptgen/template\n" in answers


def test_unreleased_changes_become_a_dev_commit_that_stays_reachable(tmp_path):
    source = two_releases(tmp_path)
    write_template(source.root.parent, {"engine.py": "VERSION = 3\n"})
    first_dev = resolve_template(source=source)
    write_template(source.root.parent, {"engine.py": "VERSION = 4\n"})

    second_dev = resolve_template(source=source)

    # 0.2.0.postN+gHASH: N counts ptgen's commits that changed the template since 0.2.0
    assert first_dev.version.startswith("0.2.0.post") and "+g" in second_dev.version
    assert first_dev.vcs_ref != second_dev.vcs_ref
    for ref, text in ((first_dev, "VERSION = 3\n"), (second_dev, "VERSION = 4\n")):
        assert run_git(cache_repo(), "show", f"{ref.vcs_ref}:engine.py") == text
    assert run_git(cache_repo(), "status", "--porcelain") == ""


def test_histories_are_reproducible_across_machines(tmp_path, monkeypatch):
    source = two_releases(tmp_path)
    write_template(source.root.parent, {"engine.py": "VERSION = 3\n"})
    here = resolve_template(source=source)
    monkeypatch.setenv("PTGEN_CACHE_DIR", str(tmp_path / "elsewhere"))

    there = resolve_template(source=source)

    assert there.src_path == (tmp_path / "elsewhere" / "template").as_posix()
    assert there.vcs_ref == here.vcs_ref
    assert tags(tmp_path / "elsewhere" / "template") == tags(
        tmp_path / "home/.cache/ptgen/template"
    )


def test_bundle_replaces_git_history_in_an_installed_copy(tmp_path):
    source = two_releases(tmp_path)
    from_git = resolve_template(source=source)
    git_tags = tags(cache_repo())
    shutil.rmtree(cache_repo())
    proc = subprocess.run(
        [sys.executable, "-m", "ptgen.template_source", "build", "--templates", str(source.root)],
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    installed = shutil.copytree(source.root, tmp_path / "site-packages" / "ptgen" / "templates")

    from_bundle = resolve_template(source=TemplateSource(installed))

    assert "wrote" in proc.stdout and (source.root / "project.bundle").is_file()
    assert from_bundle == from_git and tags(cache_repo()) == git_tags


def test_bad_versions_and_missing_history_are_clear_errors(tmp_path):
    source = two_releases(tmp_path)
    with pytest.raises(UnknownVersion, match=r"'0\.3\.0' \(released: 0\.1\.0, 0\.2\.0\)"):
        resolve_template("0.3.0", source=source)
    (source.root / "releases.toml").write_text('[releases]\n"0.3.0" = "' + "0" * 40 + '"\n')
    with pytest.raises(TemplateSourceError, match="release 0.3.0: commit 0000000000"):
        resolve_template(source=source)
    with pytest.raises(TemplateSourceError, match="lists no release"):
        build_bundle(TemplateSource(tmp_path / "nowhere"))


def test_concurrent_processes_share_one_cache(tmp_path, monkeypatch):
    source = two_releases(tmp_path)
    monkeypatch.setenv("PTGEN_TEMPLATES_DIR", str(source.root))
    code = "from ptgen.template_source import resolve_template as r; print(r().vcs_ref)"
    env = {**os.environ, "PYTHONPATH": SRC}

    procs = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    outputs = [proc.communicate()[0].strip() for proc in procs]

    assert [proc.returncode for proc in procs] == [0, 0, 0]
    assert outputs == ["v0.2.0"] * 3
    assert sorted(p.name for p in cache_repo().parent.iterdir()) == ["template"]  # lock removed


def test_ptgen_own_template_works_in_dev_mode_with_a_portable_path(tmp_path):
    released = [f"v{version}" for version, _ in default_source().releases()]
    ref = resolve_template()  # ptgen's templates/, from this checkout

    copier.run_copy(
        ref.src_path,
        tmp_path / "p",
        data={"project_name": "demo"},
        vcs_ref=ref.vcs_ref,
        defaults=True,
        quiet=True,
    )

    answers = (tmp_path / "p" / ".copier-answers.yml").read_text()
    assert "_src_path: ~/.cache/ptgen/template\n" in answers
    commit = answers.split("_commit: ")[1].split()[0]
    resolve = [f"{name}^{{commit}}" for name in (commit, ref.vcs_ref)]
    assert len(set(run_git(cache_repo(), "rev-parse", *resolve).split())) == 1
    assert str(tmp_path) not in answers
    dev_tags = [t for t in tags(cache_repo()) if t not in released]
    assert all(re.fullmatch(r"v\d+\.\d+\.\d+\.post\d+\+g[0-9a-f]{7}", t) for t in dev_tags)
    assert set(released) <= set(tags(cache_repo()))
    if ref.vcs_ref not in released:  # the template on disk is not a release: its dev tag
        assert any(
            run_git(cache_repo(), "rev-parse", f"{t}^{{commit}}").strip() == ref.vcs_ref
            for t in dev_tags
        )
    if released:  # shallow clones (CI) and wheels read releases from the committed bundle
        heads = run_git(tmp_path, "bundle", "list-heads", str(default_source().bundle))
        assert {f"refs/tags/{tag}" for tag in released} <= set(heads.split())
