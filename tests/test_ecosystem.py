"""Generated projects fit their ecosystem: git, pre-commit, CI, plots, TensorBoard."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers import run_in_project


def test_ecosystem_files_parse(default_project: Path) -> None:
    hooks = yaml.safe_load((default_project / ".pre-commit-config.yaml").read_text())
    ids = {hook["id"] for repo in hooks["repos"] for hook in repo["hooks"]}
    assert {"black", "ruff", "ptgen-lint"} <= ids
    workflow = yaml.safe_load((default_project / ".github/workflows/ci.yml").read_text())
    steps = " ".join(str(step.get("run", "")) for step in workflow["jobs"]["test"]["steps"])
    assert "pytest" in steps and "demo_proj smoke" in steps
    ignored = (default_project / ".gitignore").read_text().split()
    assert "runs/" in ignored and "__pycache__/" in ignored


def test_readme_documents_every_command_and_option(default_project: Path) -> None:
    readme = (default_project / "README.md").read_text(encoding="utf-8")
    for command in ("train", "evaluate", "smoke", "torchrun", "resume=auto"):
        assert command in readme, command
    for option in ("train.amp", "train.compile", "model.grad_checkpointing"):
        assert option in readme, option


@pytest.mark.slow
def test_plot_and_tensorboard(full_project: Path) -> None:
    out = full_project.parent / "plotted-run"
    train = run_in_project(
        full_project,
        "-m",
        "demo_proj",
        "train",
        "--set",
        "train.max_steps=4",
        "--set",
        "train.log_every=1",
        "--set",
        f"train.out_dir={out}",
        "--set",
        "train.logger=tensorboard",
    )
    assert train.returncode == 0, train.stderr
    assert any((out / "tensorboard").glob("events.out.tfevents.*"))
    plot = run_in_project(full_project, "-m", "demo_proj", "plot", "--run-dir", str(out))
    assert plot.returncode == 0, plot.stderr
    png = (out / "metrics.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 5000


def test_plot_without_a_run_is_a_clear_error(full_project: Path, tmp_path: Path) -> None:
    result = run_in_project(full_project, "-m", "demo_proj", "plot", "--run-dir", str(tmp_path))
    assert result.returncode == 1
    assert "no metrics.csv" in result.stderr and "Traceback" not in result.stderr
