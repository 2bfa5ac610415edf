"""`ptgen smoke`: per-stage report, JSON, and the failed stage named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import run_ptgen

pytestmark = pytest.mark.slow


def test_smoke_json_reports_every_stage(default_project: Path) -> None:
    result = run_ptgen("smoke", str(default_project), "--json", "--steps", "3")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert [s["name"] for s in report["stages"]] == ["train", "overfit", "evaluate", "checkpoint"]
    assert all(s["seconds"] >= 0 for s in report["stages"])
    assert report["total_seconds"] >= sum(s["seconds"] for s in report["stages"])


def test_smoke_names_the_stage_that_broke(default_project: Path) -> None:
    result = run_ptgen("smoke", str(default_project), "--set", "train.lr=1e30")
    assert result.returncode == 1
    assert "FAIL train" in result.stdout
    assert "non-finite loss" in result.stdout
    assert "smoke failed at stage 'train'" in result.stderr


def test_smoke_outside_a_project_is_a_clear_error(tmp_path: Path) -> None:
    result = run_ptgen("smoke", str(tmp_path))
    assert result.returncode == 1
    assert "not a ptgen project" in result.stderr
    assert "Traceback" not in result.stderr
