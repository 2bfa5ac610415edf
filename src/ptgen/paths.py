"""Where ptgen's templates are: inside the wheel, or in the source checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path


@cache
def templates_dir() -> Path:
    packaged = Path(__file__).parent / "templates"  # installed wheel (force-include)
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "templates"  # source checkout / editable
