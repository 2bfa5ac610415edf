"""Exclusive file locks that die with their process.

The lock is the operating system's (`flock`; `msvcrt.locking` on Windows), so a process
that is killed, even with SIGKILL, releases it at once: a stale lock file never blocks
the next run. The holder writes its PID into the file, so a refused process can say who
holds it. The file is removed on release; a process that opened it just before that
notices (the path no longer names its file) and opens the new one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from ptgen.errors import PtgenError

_PID_BYTES = 32  # the PID is written before this offset; Windows locks the byte after it


class LockHeld(PtgenError):
    """Another process holds the lock (`pid` when it could be read)."""

    def __init__(self, path: Path, pid: int | None) -> None:
        self.path, self.pid = path, pid
        holder = f"PID {pid}" if pid else "another process"
        super().__init__(f"{path} is locked by {holder}")


@contextlib.contextmanager
def exclusive_lock(path: Path, *, wait: bool = True) -> Iterator[None]:
    """Hold `path` locked; wait for it, or raise LockHeld at once when `wait` is False."""
    fd = _acquire(path, wait)
    try:
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            if os.name != "nt":  # Windows cannot remove an open file
                path.unlink()
        os.close(fd)  # closing releases the lock


def _acquire(path: Path, wait: bool) -> int:
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            _lock(fd, wait)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise LockHeld(path, pid) from None
        except BaseException:
            os.close(fd)
            raise
        if _still_named(fd, path):
            return fd
        os.close(fd)  # its holder removed it as we locked it: lock the new one


def _still_named(fd: int, path: Path) -> bool:
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, _PID_BYTES, 0).decode("ascii", "replace").strip()
    except (OSError, AttributeError):  # no pread on Windows
        return None
    return int(text) if text.isdigit() else None


if os.name == "nt":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock(fd: int, wait: bool) -> None:
        os.lseek(fd, _PID_BYTES, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_LOCK if wait else msvcrt.LK_NBLCK, 1)
        except OSError as exc:
            raise BlockingIOError(str(exc)) from None

else:
    import fcntl

    def _lock(fd: int, wait: bool) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
