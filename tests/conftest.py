"""Session fixtures; the helpers themselves are in helpers.py."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import ALL_FEATURES, generate


@pytest.fixture(scope="session")
def default_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One default project for read-only checks (do not modify it in tests)."""
    return generate(tmp_path_factory.mktemp("default"), name="demo-proj")


@pytest.fixture(scope="session")
def full_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default project with every feature (--with all of them), read-only too."""
    return generate(tmp_path_factory.mktemp("full"), name="demo-proj", features=ALL_FEATURES)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[int], Path]]:
    """Mount a tmpfs of a given size (KiB): a real filesystem that runs out of space."""
    mounts: list[Path] = []

    def mount(size_kib: int) -> Path:
        point = tmp_path / f"disk{len(mounts)}"
        point.mkdir()
        options = f"size={size_kib}k,mode=0755"
        proc = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            pytest.skip(
                "a full disk is a small tmpfs here, and mounting one needs root or "
                f"CAP_SYS_ADMIN: {proc.stderr.strip() or proc.returncode}"
            )
        mounts.append(point)
        return point

    yield mount
    for point in mounts:
        subprocess.run(["umount", "-l", str(point)], capture_output=True)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Callable[[Path], Path]]:
    """A read-only view of a folder: a read-only bind mount (root ignores permissions), or
    where mounting needs rights the tests lack, the folder with its write bits removed (as
    root, writes then still succeed: tests also assert that nothing new appears)."""
    mounts: list[Path] = []
    locked: list[Path] = []

    def view(folder: Path) -> Path:
        point = tmp_path / f"read-only{len(mounts) + len(locked)}"
        point.mkdir()
        bind = ["mount", "--bind", str(folder), str(point)]
        if subprocess.run(bind, capture_output=True).returncode == 0:
            mounts.append(point)
            remount = ["mount", "-o", "remount,bind,ro", str(point)]
            if subprocess.run(remount, capture_output=True).returncode == 0:
                return point
        subprocess.run(["chmod", "-R", "a-w", str(folder)], check=True)
        locked.append(folder)
        return point if point in mounts else folder

    yield view
    for point in reversed(mounts):
        subprocess.run(["umount", "-l", str(point)], capture_output=True)
    for folder in locked:
        subprocess.run(["chmod", "-R", "u+w", str(folder)], capture_output=True)
