"""One change at a time per project, and a change that was cut short found on the next run.

`ptgen add feature` and `ptgen remove feature` change many files of a project. Inside
`changing(project, command)`:

- the project's repository is locked (`.git/ptgen.lock`, an OS lock that dies with its
  process): a second command on the same project is refused at once, naming the holder;
- a journal (`.git/ptgen-change.json`: the command and the commit it started from) exists
  while the change runs and is removed when it ends, applied or rolled back. A journal
  found by the next run means a process was killed (SIGKILL, power loss) mid-change: that
  run refuses, and says how to undo the half-applied change, unless the project is
  visibly untouched (clean, at the same commit), when the journal is simply dropped.

Both live in the git directory, so `git status` never shows them.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from ptgen.errors import NotAProject, PtgenError
from ptgen.git import git, git_ok
from ptgen.locking import LockHeld, exclusive_lock

LOCK_NAME = "ptgen.lock"
JOURNAL_NAME = "ptgen-change.json"


class ProjectBusy(PtgenError):
    """Another ptgen command is changing the project."""


class ChangeInterrupted(PtgenError):
    """An earlier change of the project was cut short and may be half applied."""


@contextlib.contextmanager
def changing(project_dir: Path, command: str, *, write: bool = True) -> Iterator[None]:
    """Hold the project's lock (and, with `write`, its journal) around a change."""
    git_dir = _git_dir(project_dir)
    with contextlib.ExitStack() as stack:
        _lock(stack, project_dir, git_dir / LOCK_NAME)
        journal = git_dir / JOURNAL_NAME
        _check_journal(project_dir, journal)
        if write:
            try:
                _write_journal(project_dir, journal, command)
            except OSError as exc:
                raise _cannot_write(journal, exc) from None
            # applied or rolled back: the journal goes; a killed process never gets here
            stack.callback(journal.unlink, missing_ok=True)
        yield


def _lock(stack: contextlib.ExitStack, project_dir: Path, path: Path) -> None:
    try:
        stack.enter_context(exclusive_lock(path, wait=False))
    except LockHeld as exc:
        holder = f"PID {exc.pid}" if exc.pid else "another process"
        raise ProjectBusy(
            f"another ptgen command ({holder}) is changing {project_dir}: "
            "let it finish, then run this again"
        ) from None
    except OSError as exc:  # the lock is the first thing written (a full disk, read-only)
        raise _cannot_write(path, exc) from None


def _cannot_write(path: Path, exc: OSError) -> PtgenError:
    return PtgenError(f"cannot write {path}: {exc.strerror or exc}; nothing was changed")


def _git_dir(project_dir: Path) -> Path:
    if not git_ok(project_dir, "rev-parse", "--is-inside-work-tree"):
        raise NotAProject(f"{project_dir} is not in a git repository; `git init` and commit first")
    return Path(git(project_dir, "rev-parse", "--absolute-git-dir").strip())


def _head(project_dir: Path) -> str:
    return git(project_dir, "rev-parse", "-q", "--verify", "HEAD", check=False).strip()


def _write_journal(project_dir: Path, journal: Path, command: str) -> None:
    record = {"command": command, "head": _head(project_dir), "pid": os.getpid()}
    record["project"] = str(project_dir)
    tmp = journal.with_name(f"{journal.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, journal)
    finally:
        tmp.unlink(missing_ok=True)


def _check_journal(project_dir: Path, journal: Path) -> None:
    """Refuse to start over a change that a killed process left half applied."""
    try:
        record = json.loads(journal.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, ValueError):
        record = {}
    record = record if isinstance(record, dict) else {}
    command = str(record.get("command", "ptgen add/remove feature"))
    head, where = str(record.get("head", "")), Path(str(record.get("project", project_dir)))
    if not where.is_dir():
        where = project_dir
    status = git(where, "status", "--porcelain", "--untracked-files=all")
    same_commit = bool(head) and _head(project_dir) == head
    if same_commit and not status.strip():
        journal.unlink(missing_ok=True)  # killed before it changed a file: nothing to undo
        return
    if same_commit:
        raise ChangeInterrupted(
            f"`{command}` was interrupted and left {where} half changed: undo it with "
            f"`git checkout -- . && git clean -fd` in {where}, then run it again"
        )
    raise ChangeInterrupted(
        f"`{command}` was interrupted at commit {head[:12] or '?'} and what it half changed "
        f"may have been committed since: check `git diff {head[:12] or 'HEAD'}` in {where}, "
        f"undo what it did, then delete {journal}"
    )
