"""What ptgen itself promises when things go wrong (issue 18, ptgen side).

Real faults, no mocks: two real `ptgen` processes racing for one target, one of them
SIGKILLed; a real full disk (a small tmpfs: writes fail with ENOSPC exactly as on a full
partition; mounting needs root or CAP_SYS_ADMIN, as on the developers' and CI machines,
and the tests skip with that reason elsewhere); the process umask; damaged
`.copier-answers.yml` files and a damaged template cache.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import PAGE, fill_disk, generate, tree_snapshot
from typer.testing import CliRunner

from ptgen.cli import app
from ptgen.components import add_component
from ptgen.template_source import cache_repo, resolve_template

runner = CliRunner()


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def assert_one_line_failure(result: object) -> None:
    """Exit 1, exactly one `error:` line, no traceback."""
    output = result.output  # type: ignore[attr-defined]
    assert result.exit_code == 1, output  # type: ignore[attr-defined]
    assert len(error_lines(output)) == 1 and "Traceback" not in output, output


def assert_complete_project(project: Path) -> None:
    """Every contract file, and one clean commit holding all of them."""
    for rel in ("pyproject.toml", "src/demo/train.py", "src/demo/models/cnn.py"):
        assert (project / rel).is_file(), rel
    git = ["git", "-C", str(project)]
    log = subprocess.run([*git, "log", "--oneline"], capture_output=True, text=True)
    assert log.returncode == 0 and len(log.stdout.splitlines()) == 1, log.stderr
    status = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True)
    assert status.returncode == 0 and status.stdout == "", status.stdout + status.stderr


# --- two `ptgen new project` of one target at once -------------------------------------


def start_ptgen(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ptgen", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_scratch(output_dir: Path, proc: subprocess.Popen[str]) -> None:
    """Until `proc` has started writing (its scratch directory exists): it holds the lock."""
    deadline = time.monotonic() + 60
    while not any(p.is_dir() for p in output_dir.glob(".ptgen-*")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "ptgen never started writing"
        time.sleep(0.005)


def test_second_new_project_of_one_target_is_refused_naming_the_first(tmp_path: Path) -> None:
    first = start_ptgen("new", "project", "demo", "-o", str(tmp_path), "--no-smoke")
    wait_for_scratch(tmp_path, first)
    os.kill(first.pid, signal.SIGSTOP)  # the first run is now mid-way, for as long as we like
    try:
        second = runner.invoke(app, ["new", "project", "demo", "-o", str(tmp_path), "--no-smoke"])
    finally:
        os.kill(first.pid, signal.SIGCONT)
    out, err = first.communicate(timeout=120)

    assert_one_line_failure(second)
    assert f"PID {first.pid}" in second.output
    assert first.returncode == 0 and "created" in out, err
    assert_complete_project(tmp_path / "demo")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]


def test_a_killed_new_project_blocks_nothing_and_leaves_nothing(tmp_path: Path) -> None:
    killed = start_ptgen("new", "project", "demo", "-o", str(tmp_path), "--no-smoke")
    wait_for_scratch(tmp_path, killed)
    killed.kill()
    killed.wait()

    result = runner.invoke(app, ["new", "project", "demo", "-o", str(tmp_path), "--no-smoke"])

    assert result.exit_code == 0, result.output
    assert_complete_project(tmp_path / "demo")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]


# --- a full disk ---------------------------------------------------------------------


def project_pages(project: Path) -> int:
    """Pages a project takes on tmpfs (files only: tmpfs directories take no pages)."""
    return sum(-(-p.stat().st_size // PAGE) for p in project.rglob("*") if p.is_file())


@pytest.mark.parametrize("fraction", [0.1, 0.35, 0.5, 0.7, 0.85, 0.95, 1.5])
def test_new_project_on_a_full_disk_is_complete_or_absent(
    small_disk: Callable[[int], Path], default_project: Path, fraction: float
) -> None:
    """Each size runs out at another stage: Copier, the components, git objects, the commit."""
    disk = small_disk(max(int(project_pages(default_project) * 4 * fraction), 16))

    result = runner.invoke(
        app, ["new", "project", "demo", "-o", str(disk), "--no-smoke"], catch_exceptions=False
    )

    if result.exit_code == 0:
        assert "created" in result.output
        assert_complete_project(disk / "demo")
    else:
        assert_one_line_failure(result)
        assert list(disk.iterdir()) == []
    if fraction == 1.5:  # room to spare: it must succeed
        assert result.exit_code == 0, result.output


def test_new_project_force_into_a_directory_on_a_full_disk_changes_none_of_it(
    small_disk: Callable[[int], Path], default_project: Path
) -> None:
    """Room for the staged project but not for its copy into the existing directory."""
    disk = small_disk(project_pages(default_project) * 4 * 3 // 2)
    target = disk / "demo"
    target.mkdir()
    (target / "README.md").write_text("my notes\n")
    before = tree_snapshot(target)

    result = runner.invoke(
        app,
        ["new", "project", "demo", "-o", str(disk), "--no-smoke", "--force"],
        catch_exceptions=False,
    )

    assert_one_line_failure(result)
    assert tree_snapshot(target) == before
    assert sorted(p.name for p in disk.iterdir()) == ["demo"]
    assert sorted(p.name for p in target.iterdir()) == ["README.md"]


def test_add_on_a_full_disk_writes_all_or_nothing(small_disk: Callable[[int], Path]) -> None:
    disk = small_disk(2048)
    project = generate(disk, name="demo")
    plan = add_component(project, "model", "big", "cnn", dry_run=True)
    module, test = plan.files.values()
    fill_disk(disk, leave=len(module.encode()))  # the module fits, its test does not
    before = tree_snapshot(project)

    result = runner.invoke(
        app,
        ["add", "model", "big", "--kind", "cnn", "--project", str(project)],
        catch_exceptions=False,
    )

    assert_one_line_failure(result)
    assert tree_snapshot(project) == before  # no part of the component, no temp file


# --- file modes ----------------------------------------------------------------------


@pytest.mark.parametrize("umask", [0o022, 0o027], ids=["umask-022", "umask-027"])
def test_written_files_honour_the_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        project = generate(tmp_path, name="demo")
        add_component(project, "dataset", "more", "synthetic")
    finally:
        os.umask(old)
    modes = {
        str(p.relative_to(project)): stat.S_IMODE(p.stat().st_mode)
        for p in [project, *project.rglob("*")]
        if ".git" not in p.relative_to(project).parts
    }
    wanted_file, wanted_dir = 0o666 & ~umask, 0o777 & ~umask
    wrong = {
        rel: oct(mode)
        for rel, mode in modes.items()
        if mode != (wanted_dir if (project / rel).is_dir() else wanted_file)
    }
    assert wrong == {}
    assert "src/demo/data/more.py" in modes


# --- damaged answers files and template cache --------------------------------------------


def fake_project(tmp_path: Path, answers: bytes) -> Path:
    """A committed git repository whose only file is the given answers file."""
    project = tmp_path / "proj"
    (project / "src" / "demo").mkdir(parents=True)
    (project / ".copier-answers.yml").write_bytes(answers)
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env |= {"GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "answers"]):
        subprocess.run(["git", *args], cwd=project, env=env, check=True, capture_output=True)
    return project


@pytest.mark.parametrize(
    ("answers", "says"),
    [
        (b"_commit: [1, 2\n", "not valid YAML"),
        (b"- _commit\n- _src_path\n", "not a mapping"),
        (b"\x00\xff\xfe binary", "not UTF-8 text"),
        (b"", "no project_name"),
    ],
    ids=["yaml-error", "a-list", "binary", "empty"],
)
def test_a_malformed_answers_file_is_one_clear_line(
    tmp_path: Path, answers: bytes, says: str
) -> None:
    project = fake_project(tmp_path, answers)

    update = runner.invoke(app, ["update", str(project)], catch_exceptions=False)
    add = runner.invoke(
        app, ["add", "model", "net", "--project", str(project)], catch_exceptions=False
    )

    for result in (update, add):
        assert_one_line_failure(result)
        assert ".copier-answers.yml" in result.output
    assert says in add.output
    if answers:  # one reader, one message (an empty file lacks different keys for each)
        assert error_lines(update.output) == error_lines(add.output)


def test_update_from_an_unknown_template_commit_is_one_clear_line(tmp_path: Path) -> None:
    source = resolve_template().src_path
    answers = f"_commit: deadbeef\n_src_path: {source}\nproject_name: demo\n"
    project = fake_project(tmp_path, (answers + "package_name: demo\ntask: x\n").encode())

    result = runner.invoke(app, ["update", str(project)], catch_exceptions=False)

    assert_one_line_failure(result)
    assert "deadbeef" in result.output


def damage_stamps(cache: Path) -> None:
    for stamp in (cache / ".git" / "ptgen-stamps").glob("*.json"):
        stamp.write_text("[]")


def lose_the_pack(cache: Path) -> None:
    for pack in (cache / ".git" / "objects" / "pack").iterdir():
        pack.unlink()


def truncate_the_pack(cache: Path) -> None:
    for pack in (cache / ".git" / "objects" / "pack").glob("*.pack"):
        os.truncate(pack, pack.stat().st_size // 2)


def corrupt_a_blob(cache: Path) -> None:
    """Flip bytes inside one compressed file of the template: git notices only on reading it."""
    (index,) = (cache / ".git" / "objects" / "pack").glob("*.idx")
    listing = subprocess.run(
        ["git", "verify-pack", "-v", str(index)], capture_output=True, text=True, check=True
    ).stdout
    size, offset = next(
        (int(f[3]), int(f[4])) for f in map(str.split, listing.splitlines()) if f[1:2] == ["blob"]
    )
    pack = index.with_suffix(".pack")
    data = bytearray(pack.read_bytes())
    for i in range(offset + size // 2, offset + size - 4):
        data[i] ^= 0xFF
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))


def new_project_with_own_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Callable[[Path], None]
) -> object:
    monkeypatch.setenv("PTGEN_CACHE_DIR", str(tmp_path / "cache"))
    resolve_template()
    damage(cache_repo())
    return runner.invoke(
        app,
        ["new", "project", "demo", "-o", str(tmp_path / "out"), "--no-smoke"],
        catch_exceptions=False,
    )


@pytest.mark.parametrize("damage", [damage_stamps, lose_the_pack, truncate_the_pack])
def test_a_damaged_template_cache_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Callable[[Path], None]
) -> None:
    result = new_project_with_own_cache(tmp_path, monkeypatch, damage)

    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert_complete_project(tmp_path / "out" / "demo")


def test_a_cache_damaged_past_checking_is_one_line_saying_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Damage that only reading every file would find: ptgen says what to delete."""
    result = new_project_with_own_cache(tmp_path, monkeypatch, corrupt_a_blob)

    assert_one_line_failure(result)
    assert "delete that directory" in result.output  # type: ignore[attr-defined]
    assert str(tmp_path / "cache" / "template") in result.output  # type: ignore[attr-defined]
    assert not (tmp_path / "out").exists()
