"""`ptgen smoke`: run a project's own smoke command and report each stage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ptgen.errors import SmokeFailed


@dataclass
class Stage:
    name: str
    ok: bool
    seconds: float
    detail: str


@dataclass
class SmokeReport:
    stages: list[Stage] = field(default_factory=list)
    total_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.stages) and all(stage.ok for stage in self.stages)

    @property
    def startup_seconds(self) -> float:
        """Interpreter start and imports: the time not spent inside any stage."""
        return max(self.total_seconds - sum(s.seconds for s in self.stages), 0.0)


def smoke(
    project_dir: Path, steps: int = 5, overrides: list[str] | None = None, check: bool = True
) -> SmokeReport:
    """Run `python -m PKG smoke --json` with src/ on the path.

    With `check`, a failure raises SmokeFailed naming the stage that broke.
    """
    from ptgen.components import read_project

    project_dir = project_dir.resolve()
    project = read_project(project_dir)
    command = [sys.executable, "-m", project.package, "smoke", "--json", "--steps", str(steps)]
    for item in overrides or []:
        command += ["--set", item]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(project_dir / "src"), env.get("PYTHONPATH")])
    )
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=project_dir, env=env, capture_output=True, text=True)
    report = SmokeReport(total_seconds=time.perf_counter() - start)
    payload = _last_json_line(proc.stdout)
    if payload is None:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise SmokeFailed(f"smoke of {project_dir} failed before any stage ran: {last}")
    report.stages = [Stage(**stage) for stage in payload["stages"]]
    if check and not report.ok:
        failed = next((s for s in report.stages if not s.ok), None)
        where = f"stage '{failed.name}': {failed.detail}" if failed else "an incomplete run"
        raise SmokeFailed(f"smoke of {project_dir} failed at {where}")
    return report


def _last_json_line(stdout: str) -> dict | None:
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None
