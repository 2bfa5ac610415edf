"""Write (and remove) a set of files all or nothing, with the modes the user's umask gives
new files.

`write_files` first writes every file's content to a temporary file beside it: that is
where the space is allocated, so a full disk (or a file-size limit) fails there, before
any file changed. Only then does it rename the temporary files into place and remove the
files to remove, and should one of these fail it puts back what it had replaced or
removed. Temporary files are created with mode 0666 less the umask, as `open()` would, not
0600 as `tempfile.mkstemp` does; a file that is replaced keeps its mode.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from ptgen.errors import PtgenError


class WriteFailed(PtgenError):
    """A file could not be written; nothing was changed."""


def write_files(
    files: Mapping[Path, bytes],
    modes: Mapping[Path, int] | None = None,
    dirs: Iterable[Path] = (),
    remove: Iterable[Path] = (),
) -> None:
    """Create `dirs`, write `files` (path -> content, with optional modes) and remove the
    files in `remove` (their emptied folders too), or do nothing."""
    batch = _Batch()
    try:
        for directory in dirs:
            batch.make_dirs(directory)
        for path, data in files.items():
            batch.stage(path, data, (modes or {}).get(path))
        for path in remove:
            batch.stage_removal(path)
        batch.commit()
        batch.remove_leftovers()
        batch.prune_folders()
    except BaseException as exc:
        batch.rollback()
        if isinstance(exc, OSError):
            raise WriteFailed(
                f"cannot write {batch.current}: {exc.strerror or exc}; nothing was written"
            ) from None
        raise
    finally:
        batch.remove_leftovers()


class _Batch:
    """The state of one write_files call: what it created, staged and replaced."""

    def __init__(self) -> None:
        self.current: Path | None = None  # the path being written, for error messages
        self.created_dirs: list[Path] = []
        self.staged: list[tuple[Path, Path]] = []  # (temporary file, destination)
        self.backups: dict[Path, Path] = {}  # destination -> a link to its old content
        self.replaced: list[Path] = []
        self.removals: list[Path] = []

    def make_dirs(self, directory: Path) -> None:
        self.current = directory
        missing = []
        while not directory.exists():
            missing.append(directory)
            directory = directory.parent
        for path in reversed(missing):
            path.mkdir()  # mode 0777 less the umask
            self.created_dirs.append(path)

    def stage(self, dest: Path, data: bytes, mode: int | None) -> None:
        """Write `data` beside `dest`; keep a second name for what `dest` holds now."""
        self.make_dirs(dest.parent)
        self.current = dest
        tmp = _unique_name(dest, "tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # 0666 less the umask
        self.staged.append((tmp, dest))
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if dest.exists():
            os.chmod(tmp, stat.S_IMODE(dest.stat().st_mode) if mode is None else mode)
            self.backups[dest] = _backup(dest)
        elif mode is not None:
            os.chmod(tmp, mode)

    def stage_removal(self, dest: Path) -> None:
        """Keep a second name for `dest`, to put it back should the batch fail."""
        self.current = dest
        self.backups[dest] = _backup(dest)
        self.removals.append(dest)

    def commit(self) -> None:
        for tmp, dest in self.staged:
            self.current = dest
            os.replace(tmp, dest)
            self.replaced.append(dest)
        for dest in self.removals:
            self.current = dest
            dest.unlink()
            self.replaced.append(dest)

    def prune_folders(self) -> None:
        """After a commit, with the backups gone: remove the folders removals emptied."""
        for dest in self.removals:
            _remove_empty_parents(dest.parent)

    def rollback(self) -> None:
        """Put back what commit() replaced, newest first; remove what this batch made."""
        for dest in reversed(self.replaced):
            backup = self.backups.pop(dest, None)
            with contextlib.suppress(OSError):
                if backup is None:
                    dest.unlink()
                else:
                    os.replace(backup, dest)
        self.remove_leftovers()
        for directory in reversed(self.created_dirs):
            with contextlib.suppress(OSError):
                directory.rmdir()

    def remove_leftovers(self) -> None:
        for leftover in [tmp for tmp, _ in self.staged] + list(self.backups.values()):
            with contextlib.suppress(OSError):
                leftover.unlink(missing_ok=True)


def _remove_empty_parents(folder: Path) -> None:
    """Remove `folder` and its parents while they are empty (as git does)."""
    with contextlib.suppress(OSError):  # not empty: stop there
        while not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent


def _unique_name(dest: Path, kind: str) -> Path:
    """A hidden name next to `dest` that no file has yet."""
    while True:
        path = dest.with_name(f".{dest.name}.{secrets.token_hex(4)}.ptgen-{kind}")
        if not path.exists():
            return path


def _backup(dest: Path) -> Path:
    """A second name for `dest`'s current content: a hard link, which needs no space."""
    backup = _unique_name(dest, "bak")
    try:
        os.link(dest, backup)
    except OSError:  # a filesystem without hard links
        shutil.copy2(dest, backup)
    return backup
