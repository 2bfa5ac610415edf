"""Where ptgen's templates are: inside the wheel, or in the source checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path


@cache
def templates_dir() -> Path:
    here = Path(__file__).resolve().parent  # absolute: Copier changes the working directory
    packaged = here / "templates"  # installed wheel (force-include)
    if packaged.is_dir():
        return packaged
    return here.parents[1] / "templates"  # source checkout / editable
