"""A file plan: what a command will write, checked for conflicts, shown or applied atomically."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from ptgen.atomic import write_files
from ptgen.errors import ConflictError


@dataclass
class FilePlan:
    """Files (relative path -> new content) to write below `root`."""

    root: Path
    files: dict[str, str] = field(default_factory=dict)

    def add(self, relative: str, content: str) -> None:
        self.files[relative] = content

    def existing(self) -> list[str]:
        """Planned paths that already exist (identical or not: they may be the user's)."""
        return [rel for rel in self.files if (self.root / rel).exists()]

    def check_conflicts(self, force: bool) -> None:
        clashes = self.existing()
        if clashes and not force:
            raise ConflictError(
                f"would overwrite {', '.join(clashes)} in {self.root}; use --force to replace"
            )

    def describe(self) -> list[str]:
        """One line per file: `create PATH`, `overwrite PATH` or `identical PATH`."""
        lines = []
        for rel, content in self.files.items():
            path = self.root / rel
            if not path.exists():
                lines.append(f"create    {rel}")
            elif _read(path) == content:
                lines.append(f"identical {rel}")
            else:
                lines.append(f"overwrite {rel}")
                lines.extend(_diff(rel, _read(path), content))
        return lines

    def apply(self) -> list[Path]:
        """Write every file or none (see ptgen.atomic): never half a plan, nor half a file."""
        paths = {self.root / rel: content.encode("utf-8") for rel, content in self.files.items()}
        write_files(paths)
        return list(paths)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _diff(rel: str, old: str, new: str) -> list[str]:
    return [
        "    " + line.rstrip("\n")
        for line in difflib.unified_diff(
            old.splitlines(True), new.splitlines(True), f"a/{rel}", f"b/{rel}"
        )
    ]
