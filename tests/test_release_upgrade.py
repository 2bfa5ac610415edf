"""A project made by ptgen 0.1.0, with a user's edits, updated to the newest template.

The 0.1.0 project is the 0.1.0 Copier template (from templates/project.bundle) plus the
components ptgen 0.1.0 wrote (tests/fixtures/components-0.1.0). The user edited a model's
forward, a config default and the README, and added a dataset. `ptgen update` keeps the
edits that do not clash, lists each conflict and each component to upgrade with exit 1;
resolved as CHANGELOG.md says, the project's own tests and smoke pass.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import copier
import pytest
from helpers import run_in_project
from typer.testing import CliRunner

from ptgen import git
from ptgen.cli import app
from ptgen.template_source import resolve_template

FIXTURES = Path(__file__).parent / "fixtures" / "components-0.1.0"
ANSWERS = {
    "project_name": "demo",
    "package_name": "demo",
    "description": "A PyTorch project",
    "author": "",
    "task": "image-classification",
    "model_name": "cnn",
    "dataset_name": "synthetic",
    "amp": False,
    "compile": False,
    "grad_checkpointing": False,
}
FORWARD = "x = self.pool(x).flatten(1)  # (B, C_last)"
FORWARD_EDIT = "x = self.pool(x).flatten(1) * 1.0  # (B, C_last); my edit"
FORWARD_NOW = "x = self.pool(x).flatten(1)  # (B, C_last * pool_size * pool_size)"
NOTES = "\n## Our notes\n\nTrain on the lab machine.\n"
runner = CliRunner()


def project_at_0_1_0(where: Path) -> Path:
    ref = resolve_template("0.1.0")
    project = where / "demo"
    copier.run_copy(
        ref.src_path, project, data=ANSWERS, vcs_ref=ref.vcs_ref, defaults=True, quiet=True
    )
    for source in FIXTURES.rglob("*.py"):
        folder, name = source.relative_to(FIXTURES).parts
        target = project / ("tests" if folder == "tests" else f"src/demo/{folder}") / name
        shutil.copyfile(source, target)
    assert git.init_and_commit(project, "Generate demo with ptgen 0.1.0")
    return project


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def take_the_update(path: Path) -> None:
    """Resolve Copier's inline conflicts in favour of the new template."""
    text = path.read_text(encoding="utf-8")
    pattern = r"<<<<<<< [^\n]*\n.*?\n=======\n(.*?)>>>>>>> [^\n]*\n"
    path.write_text(re.sub(pattern, r"\1", text, flags=re.S), encoding="utf-8")


@pytest.mark.slow
def test_a_0_1_0_project_with_edits_updates_and_trains(tmp_path: Path) -> None:
    project = project_at_0_1_0(tmp_path)
    package = project / "src" / "demo"
    edit(package / "models" / "cnn.py", FORWARD, FORWARD_EDIT)
    edit(package / "config.py", "epochs: int = 10", "epochs: int = 3")
    (project / "README.md").write_text(
        (project / "README.md").read_text(encoding="utf-8") + NOTES, encoding="utf-8"
    )
    extra = (package / "data" / "extra.py").read_bytes()
    git.git(project, "commit", "-qam", "my edits", env=git.commit_env(project))
    old_run = ["train.max_steps=2", "data.num_samples=64", "train.out_dir=runs/v01"]
    trained = run_in_project(
        project, "-m", "demo", "train", *sum((["--set", o] for o in old_run), [])
    )
    assert trained.returncode == 0, trained.stderr  # a 0.1.0 checkpoint (runs/ is ignored)

    result = runner.invoke(app, ["update", str(project)])
    assert result.exit_code == 1, result.output
    lines = {" ".join(line.split()) for line in result.output.splitlines()}
    assert "conflict src/demo/config.py" in lines
    for component in ("models/cnn.py", "data/synthetic.py", "data/extra.py"):
        assert f"upgrade src/demo/{component}" in lines, result.output
    # what did not clash survived, next to the new template's text
    readme = (project / "README.md").read_text(encoding="utf-8")
    assert readme.endswith(NOTES) and "How the code is laid out" in readme
    assert FORWARD_EDIT in (package / "models" / "cnn.py").read_text(encoding="utf-8")
    assert (package / "data" / "extra.py").read_bytes() == extra
    train = (package / "train.py").read_text(encoding="utf-8")
    assert "def train(run: Run, monitor: Monitor)" in train

    # Resolve as CHANGELOG.md says: conflicts, then the components, then default.toml.
    for path in project.rglob("*"):
        if path.suffix == ".rej":
            path.unlink()
        elif (
            path.is_file()
            and ".git" not in path.parts
            and "<<<<<<< " in path.read_text(encoding="utf-8", errors="replace")
        ):
            take_the_update(path)
    edit(package / "config.py", "epochs: int = option(10,", "epochs: int = option(3,")
    for args in (
        ["model", "cnn", "--kind", "cnn"],
        ["dataset", "synthetic", "--kind", "synthetic"],
        ["dataset", "extra", "--kind", "synthetic"],
    ):
        added = runner.invoke(app, ["add", *args, "--force", "--project", str(project)])
        assert added.exit_code == 0, added.output
    edit(package / "models" / "cnn.py", FORWARD_NOW, FORWARD_EDIT)
    defaults = run_in_project(project, "-m", "demo", "defaults", "--write")
    assert defaults.returncode == 0, defaults.stderr
    assert "epochs = 3  #" in (project / "configs" / "default.toml").read_text(encoding="utf-8")

    tests = run_in_project(project, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    smoke = run_in_project(project, "-m", "demo", "smoke", "--steps", "3")
    assert smoke.returncode == 0 and smoke.stdout.count("PASS") == 4, smoke.stdout + smoke.stderr
    # 0.1 checkpoints load; the regenerated cnn pools to a grid unless told otherwise
    old = ["evaluate", "--checkpoint", "runs/v01/last.pt", "--set", "model.pool_size=1"]
    old = run_in_project(project, "-m", "demo", *old)
    assert old.returncode == 0 and "accuracy" in old.stdout, old.stderr
