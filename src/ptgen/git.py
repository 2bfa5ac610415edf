"""The few git operations ptgen needs, working without a configured git identity."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

NEUTRAL_IDENTITY = {
    "GIT_AUTHOR_NAME": "ptgen",
    "GIT_AUTHOR_EMAIL": "ptgen@localhost",
    "GIT_COMMITTER_NAME": "ptgen",
    "GIT_COMMITTER_EMAIL": "ptgen@localhost",
}


def available() -> bool:
    return shutil.which("git") is not None


def git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=_env(cwd), capture_output=True, text=True, check=True
    )


def _env(cwd: Path) -> dict[str, str]:
    """The caller's environment, plus a neutral identity only where none is configured."""
    env = dict(os.environ)
    email = subprocess.run(
        ["git", "config", "user.email"], cwd=cwd, capture_output=True, text=True
    ).stdout.strip()
    if not email and not env.get("GIT_AUTHOR_EMAIL"):
        env.update(NEUTRAL_IDENTITY)
    return env


def init_and_commit(path: Path, message: str) -> bool:
    """`git init` + commit everything; False (and nothing raised) when git is missing or fails."""
    if not available():
        return False
    try:
        if not (path / ".git").exists():
            git(["init", "-q", "-b", "main"], path)
        git(["add", "-A"], path)
        git(["commit", "-q", "--no-verify", "-m", message], path)
    except subprocess.CalledProcessError:
        return False
    return True
