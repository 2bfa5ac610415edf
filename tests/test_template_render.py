"""The Copier template renders black- and ruff-clean as is, so updates never fight formatting."""

from __future__ import annotations

import subprocess
from pathlib import Path

import copier

from ptgen.paths import templates_dir


def test_raw_copier_render_is_already_black_clean(tmp_path: Path) -> None:
    target = tmp_path / "raw"
    copier.run_copy(
        str(templates_dir() / "project"),
        target,
        data={"project_name": "raw-proj", "amp": True, "compile": True, "grad_checkpointing": True},
        defaults=True,
        quiet=True,
    )
    subprocess.run(["black", "--check", "-q", "."], cwd=target, check=True)
    subprocess.run(["ruff", "check", "-q", "."], cwd=target, check=True)
