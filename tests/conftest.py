"""Session fixtures; the helpers themselves are in helpers.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import generate


@pytest.fixture(scope="session")
def default_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One default project for read-only checks (do not modify it in tests)."""
    return generate(tmp_path_factory.mktemp("default"), name="demo-proj")
