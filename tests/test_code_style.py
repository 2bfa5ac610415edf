"""ptgen's own code is black- and ruff-clean (the same tools it applies to generated code)."""

from __future__ import annotations

import subprocess

from helpers import REPO

PATHS = ["src", "tests", "bench", "generated_examples/regenerate.py"]


def test_black_clean() -> None:
    subprocess.run(["black", "--check", "-q", *PATHS], cwd=REPO, check=True)


def test_ruff_clean() -> None:
    subprocess.run(["ruff", "check", "-q", *PATHS], cwd=REPO, check=True)
