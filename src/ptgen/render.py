"""Rendering component templates with Jinja and formatting Python with black."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from ptgen.paths import templates_dir

BLACK_LINE_LENGTH = 100  # generated projects configure black and ruff with this length


def render_file(template: Path, context: dict[str, Any]) -> str:
    """Render one template file; an undefined variable is an error, not an empty string.

    Besides the template's own folder, the loader searches templates/: a component
    template imports `_lib/parts.jinja` and includes the parts beside it (see
    templates/_lib/README.md)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([template.parent, templates_dir()]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    return env.get_template(template.name).render(**context)


def format_python(source: str, path: str = "<generated>") -> str:
    """black-format generated Python (black is imported only when needed)."""
    import black

    try:
        return black.format_str(source, mode=black.Mode(line_length=BLACK_LINE_LENGTH))
    except black.InvalidInput as exc:  # a template bug, not a user error
        raise RuntimeError(f"generated {path} is not valid Python: {exc}") from exc
