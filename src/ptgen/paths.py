"""Where ptgen's templates are: $PTGEN_TEMPLATES_DIR, inside the wheel, or in the checkout."""

from __future__ import annotations

import os
from pathlib import Path

TEMPLATES_ENV = "PTGEN_TEMPLATES_DIR"


def templates_dir() -> Path:
    """`$PTGEN_TEMPLATES_DIR` (a copy of templates/ to develop against), else ptgen's own."""
    override = os.environ.get(TEMPLATES_ENV)
    if override:
        return Path(override).expanduser().absolute()
    packaged = Path(__file__).parent / "templates"  # installed wheel (force-include)
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "templates"  # source checkout / editable
