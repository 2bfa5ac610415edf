"""Run git and read its answer; make a new project's first commit.

Failures become GitError, a PtgenError, so the CLI shows them as one line. Commits work
without a configured git identity (CI has none): a neutral one is used only then.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from ptgen.errors import PtgenError

NEUTRAL_IDENTITY = {
    "GIT_AUTHOR_NAME": "ptgen",
    "GIT_AUTHOR_EMAIL": "ptgen@localhost",
    "GIT_COMMITTER_NAME": "ptgen",
    "GIT_COMMITTER_EMAIL": "ptgen@localhost",
}


class GitError(PtgenError):
    """A git command failed, or git is not installed."""


class GitNotFound(GitError):
    """git is not installed or not on PATH."""


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
        raise GitNotFound("git is not installed or not on PATH") from None
    if check and proc.returncode != 0:
        raise GitError(f"git {' '.join(args[:2])} failed in {cwd}: {last_line(proc.stderr)}")
    return proc.stdout


def last_line(output: object) -> str:
    """The last non-empty line of a command's output: usually git's reason."""
    lines = str(output or "").strip().splitlines()
    return lines[-1] if lines else "(no message)"


def git_ok(cwd: Path, *args: str) -> bool:
    """True when `git ARGS` exits 0 (for questions such as 'is this a repository?')."""
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


def commit_env(cwd: Path) -> dict[str, str]:
    """The caller's environment, plus a neutral identity only where none is configured."""
    env = dict(os.environ)
    configured = git_ok(cwd, "config", "user.email") or env.get("GIT_AUTHOR_EMAIL")
    if not configured:
        env.update(NEUTRAL_IDENTITY)
    return env


def init_and_commit(path: Path, message: str) -> bool:
    """`git init` + commit everything; False when git is not installed, GitError when it fails."""
    try:
        if not (path / ".git").exists():
            git(path, "init", "-q", "-b", "main")
        git(path, "add", "-A")
        git(path, "commit", "-q", "--no-verify", "-m", message, env=commit_env(path))
    except GitNotFound:
        return False
    return True
