"""Where `copier copy` takes the project template from (versioning comes later)."""

from __future__ import annotations

from dataclasses import dataclass

from ptgen import __version__
from ptgen.paths import templates_dir


@dataclass(frozen=True)
class TemplateRef:
    src_path: str
    vcs_ref: str | None
    version: str


def resolve_template(version: str | None = None) -> TemplateRef:
    return TemplateRef(str(templates_dir() / "project"), None, __version__)
