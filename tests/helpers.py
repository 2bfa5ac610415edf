"""Shared helpers: generate real projects (real Copier, real black) into temporary dirs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ptgen.project import ProjectOptions, new_project

REPO = Path(__file__).resolve().parents[1]


def generate(tmp_path: Path, name: str = "demo", **options: object) -> Path:
    """A project generated through the library API, without the smoke run."""
    return new_project(ProjectOptions(name=name, **options), tmp_path, run_smoke=False).path


def run_in_project(
    project: Path, *args: str, timeout: int = 600
) -> subprocess.CompletedProcess[str]:
    """Run `python -m <args>` inside a generated project with its src/ on the path."""
    env = dict(os.environ, PYTHONPATH=str(project / "src"), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        [sys.executable, *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_ptgen(
    *args: str, cwd: Path | None = None, timeout: int = 600
) -> subprocess.CompletedProcess[str]:
    """The real command line in a subprocess, as a user would run it."""
    return subprocess.run(
        [sys.executable, "-m", "ptgen", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def tree_snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }
