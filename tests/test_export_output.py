"""`export --output` never loses a file: a checkpoint is never replaced, another existing
file only with --force (issue 36, item 1). On the session's project with every feature."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_in_project

PKG = "demo_proj"


@pytest.fixture(scope="module")
def run_dir(full_project: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "run"
    settings = ["train.max_steps=2", "train.epochs=1", f"train.out_dir={out}"]
    result = run_in_project(
        full_project, "-m", PKG, "train", *[a for s in settings for a in ("--set", s)]
    )
    assert result.returncode == 0, result.stderr
    return out


def export(project: Path, run_dir: Path, output: Path, *extra: str):
    checkpoint = str(run_dir / "best.pt")
    args = ["export", "--checkpoint", checkpoint, "--format", "pt2", "--output", str(output)]
    return run_in_project(project, "-m", PKG, *args, *extra)


@pytest.mark.parametrize("force", [False, True])
def test_export_never_writes_over_a_checkpoint(
    full_project: Path, run_dir: Path, force: bool
) -> None:
    last = run_dir / "last.pt"
    before = last.read_bytes()

    result = export(full_project, run_dir, last, *(["--force"] if force else []))

    assert result.returncode == 1 and "never replaced" in result.stderr, result.stderr
    assert last.read_bytes() == before and not Path(f"{last}.json").exists()


def test_export_replaces_another_file_only_with_force(
    full_project: Path, run_dir: Path, tmp_path: Path
) -> None:
    target = tmp_path / "model.pt2"
    target.write_text("mine\n")

    refused = export(full_project, run_dir, target)

    assert refused.returncode == 1 and "--force" in refused.stderr
    assert target.read_text() == "mine\n"
    forced = export(full_project, run_dir, target, "--force")
    assert forced.returncode == 0, forced.stderr
    assert target.read_bytes() != b"mine\n" and Path(f"{target}.json").is_file()


def test_a_failed_write_names_the_output_not_its_staging_file(
    full_project: Path, run_dir: Path, small_disk, read_only, tmp_path: Path
) -> None:
    """A full disk (torch's own writer aborted the process) and a read-only folder: one line
    naming --output, nothing left behind (issue 36, item 14)."""
    full = small_disk(20) / "model.pt2"  # the program is ~30 KB
    (tmp_path / "mine").mkdir()
    locked = read_only(tmp_path / "mine") / "model.pt2"
    cases = [(full, "No space left on device")]
    if locked.parent != tmp_path / "mine" or os.geteuid() != 0:  # else root writes anyway
        cases.append((locked, ""))
    for target, reason in cases:
        result = export(full_project, run_dir, target)
        assert result.returncode == 1, result.stderr
        assert result.stderr.startswith(f"error: cannot write {target}: {reason}"), result.stderr
        assert result.stderr.count("\n") == 1 and ".export-" not in result.stderr
        assert list(target.parent.iterdir()) == []


def test_the_staging_folder_of_a_killed_export_is_removed_by_the_next(
    full_project: Path, run_dir: Path, tmp_path: Path
) -> None:
    """A SIGKILLed export leaves its staging folder `.export-PID-*` beside --output; the
    next export there removes it (and not the folder of an export still running)."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead, running = tmp_path / f".export-{gone.pid}-ab12", tmp_path / f".export-{os.getpid()}-cd"
    for staging in (dead, running):
        staging.mkdir()
        (staging / "model.pt2").write_bytes(b"half")
    result = export(full_project, run_dir, tmp_path / "model.pt2")
    assert result.returncode == 0, result.stderr
    assert not dead.exists() and running.is_dir()
