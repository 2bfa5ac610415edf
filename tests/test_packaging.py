"""ptgen installed the way users install a tool (pip, pipx, uv tool): the built wheel alone in
a fresh virtual environment, no `-e`, no extras. Its first command must work (issue 48)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import REPO
from packaging.requirements import Requirement

from ptgen._toml import tomllib


def requirement_names(pyproject: Path, extra: str | None = None) -> set[str]:
    """The distribution names a pyproject.toml depends on (of one extra, when given)."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    listed = project["optional-dependencies"][extra] if extra else project["dependencies"]
    return {Requirement(text).name.lower() for text in listed}


def test_ptgen_depends_on_everything_a_default_project_depends_on(
    default_project: Path,
) -> None:
    """`ptgen new project` smoke-trains the new project with ptgen's own interpreter, so
    whatever the default project needs must come with ptgen (numpy, tqdm, ... were [dev])."""
    needed = requirement_names(default_project / "pyproject.toml")
    missing = needed - requirement_names(REPO / "pyproject.toml")
    assert not missing, f"ptgen's dependencies lack what a default project needs: {missing}"


@pytest.mark.slow
def test_the_wheel_in_a_fresh_venv_creates_a_project_that_passes_its_smoke(
    tmp_path: Path,
) -> None:
    """The built wheel, installed alone (plus the pinned CPU torch, as .ci/run does), runs
    `ptgen new project demo` with its smoke test, outside the source tree."""
    dist, venv, work = tmp_path / "dist", tmp_path / "venv", tmp_path / "work"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(REPO)],
        check=True,
    )
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    (wheel,) = dist.glob("ptgen-*.whl")
    subprocess.run([*pip, "torch==2.13.0", str(wheel)], check=True, capture_output=True)
    work.mkdir()
    # Nothing of this checkout or of the test environment: a user's shell.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PTGEN_"))}
    env["PTGEN_CACHE_DIR"] = str(tmp_path / "cache")
    ptgen = str(venv / "bin" / "ptgen")

    start = time.perf_counter()
    created = subprocess.run(
        [ptgen, "new", "project", "demo"], cwd=work, env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start

    assert created.returncode == 0, created.stdout + created.stderr
    assert (work / "demo" / "src" / "demo" / "train.py").is_file()
    version = subprocess.run([ptgen, "--version"], env=env, capture_output=True, text=True)
    assert version.stdout.startswith("ptgen 0.6") and "(template " in version.stdout
    print(f"wheel: new project with its smoke test in {seconds:.1f}s")
