"""Run git and read its answer (ptgen.git makes a new project's first commit).

Failures become GitError, a PtgenError, so the CLI shows them as one line.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from ptgen.errors import PtgenError


class GitError(PtgenError):
    """A git command failed, or git is not installed."""


def git(cwd: Path, *args: str, env: Mapping[str, str] | None = None, check: bool = True) -> str:
    """Run `git ARGS` in `cwd` and return its stdout; raise GitError when it fails."""
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=dict(env) if env is not None else None,
            capture_output=True,
            text=True,
        )
    except FileNotFoundError:
        raise GitError("git is not installed or not on PATH") from None
    if check and proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()[-1:] or ["(no message)"]
        raise GitError(f"git {' '.join(args[:2])} failed in {cwd}: {detail[0]}")
    return proc.stdout


def git_ok(cwd: Path, *args: str) -> bool:
    """True when `git ARGS` exits 0 (for questions such as 'is this a repository?')."""
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True).returncode == 0
    except FileNotFoundError:
        return False
