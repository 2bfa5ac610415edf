"""Issue 48, round three of the fault probe (items 6, 7, 12, 14, 17, 19): generate is bounded
and streams, a run directory or another task's checkpoint is named as such, resume speaks
one numbering and names what a removed feature took, W&B without a login is one line, and
a pretrained model kind starts from its own training defaults. Real projects, really
trained for a few steps; one project per kind (module fixtures).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tomllib
from helpers import generate, run_in_project
from typer.testing import CliRunner

from ptgen.cli import app

EMA_PKG = "emaproj"
LM_PKG = "lmproj"
TINY = ("data.num_samples=64", "data.image_size=16", "train.batch_size=16")


def sets(*settings: str) -> list[str]:
    return [arg for setting in settings for arg in ("--set", setting)]


@pytest.fixture(scope="module")
def ema_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """An image project with EMA (and W&B), trained for one whole epoch: (project, its run
    folder)."""
    project = generate(tmp_path_factory.mktemp("ema"), EMA_PKG, features=("ema", "wandb"))
    out = project / "runs" / "one"
    settings = (*TINY, "train.epochs=1", f"train.out_dir={out}")
    result = run_in_project(project, "-m", EMA_PKG, "train", *sets(*settings))
    assert result.returncode == 0, result.stderr
    return project, out


@pytest.mark.slow
def test_resuming_a_finished_run_numbers_epochs_as_its_log_does(
    ema_run: tuple[Path, Path], tmp_path: Path
) -> None:
    """Item 17: "resuming ... at epoch 2, step 4" then "nothing left to train (epoch 1/1"."""
    project, run = ema_run
    out = tmp_path / "run"
    shutil.copytree(run, out)
    settings = (*TINY, "train.epochs=1", f"train.out_dir={out}", "train.resume=auto")
    result = run_in_project(project, "-m", EMA_PKG, "train", *sets(*settings))
    assert result.returncode == 0, result.stderr
    assert f"resuming from {out / 'last.pt'} at the end of epoch 1, step 4" in result.stdout
    assert "nothing left to train (the end of epoch 1, step 4)" in result.stdout
    assert "epoch 2" not in result.stdout


@pytest.mark.slow
def test_resuming_after_removing_a_feature_names_the_settings_it_took(
    ema_run: tuple[Path, Path], tmp_path: Path
) -> None:
    """Item 7: after `ptgen remove feature ema` the checkpoint's average was dropped without
    a word (only max_steps was named as changed)."""
    source, run = ema_run
    project = tmp_path / "project"
    shutil.copytree(source, project, ignore=shutil.ignore_patterns("runs"))  # as committed
    removed = CliRunner().invoke(app, ["remove", "feature", "ema", "--project", str(project)])
    assert removed.exit_code == 0, removed.output
    out = tmp_path / "run"
    shutil.copytree(run, out)
    settings = (*TINY, "train.epochs=2", "train.max_steps=4", f"train.out_dir={out}")
    result = run_in_project(project, "-m", EMA_PKG, "train", *sets(*settings, "train.resume=auto"))
    assert result.returncode == 0, result.stderr
    changed = next(line for line in result.stdout.splitlines() if "changed settings" in line)
    assert "train.ema_decay: 0.999 -> gone (no such setting now)" in changed, changed
    assert "train.ema_eval: True -> gone" in changed and "train.epochs: 1 -> 2" in changed


@pytest.fixture(scope="module")
def lm_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A language-modeling project trained for two steps: (project, its run folder)."""
    project = generate(tmp_path_factory.mktemp("lm"), LM_PKG, task="language-modeling")
    out = project / "runs" / "lm"
    settings = ("train.max_steps=2", "train.batch_size=4", f"train.out_dir={out}")
    result = run_in_project(project, "-m", LM_PKG, "train", *sets(*settings))
    assert result.returncode == 0, result.stderr
    return project, out


@pytest.mark.slow
def test_generate_refuses_an_unbounded_length_and_streams_what_it_draws(
    lm_run: tuple[Path, Path], tmp_path: Path
) -> None:
    """Item 6: --max-new-tokens 1000000000 ran with no bound, printing nothing until the end."""
    project, out = lm_run
    generate_args = ["-m", LM_PKG, "generate", "--checkpoint", str(out / "last.pt"), "Once"]
    huge = run_in_project(project, *generate_args, "--max-new-tokens", "1000000000", timeout=60)
    assert huge.returncode == 1 and huge.stderr.count("\n") == 1, huge.stderr
    assert "--max-new-tokens must be 1 to 100,000; got 1,000,000,000" in huge.stderr
    printed = tmp_path / "stdout.txt"
    env = dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")
    with open(printed, "w", encoding="utf-8") as stdout:
        proc = subprocess.Popen(
            [sys.executable, *generate_args, "--max-new-tokens", "100000"],
            cwd=project,
            env=env,
            stdout=stdout,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 120
            while len(printed.read_text(encoding="utf-8")) < 20 and time.monotonic() < deadline:
                assert proc.poll() is None, proc.communicate()[1]
                time.sleep(0.1)
            assert proc.poll() is None  # text came while it still draws
        finally:
            proc.kill()
            proc.wait()
    assert printed.read_text(encoding="utf-8").startswith("Once")
    assert len(printed.read_text(encoding="utf-8")) >= 20


@pytest.mark.slow
def test_generate_names_a_run_folder_and_another_tasks_checkpoint(
    lm_run: tuple[Path, Path], ema_run: tuple[Path, Path]
) -> None:
    """Item 14: a run folder was "no such checkpoint file"; an image-classification
    checkpoint was a missing data kind."""
    project, out = lm_run
    image_checkpoint = ema_run[1] / "last.pt"
    for checkpoint, said in [
        (out, f"error: {out} is a folder; pass a checkpoint in it: {out / 'best.pt'}"),
        (
            image_checkpoint,
            f"error: {image_checkpoint}: a checkpoint of task image-classification; "
            "this project learns language-modeling",
        ),
    ]:
        result = run_in_project(project, "-m", LM_PKG, "generate", "--checkpoint", str(checkpoint))
        assert result.returncode == 1 and result.stderr == said + "\n", result.stderr


@pytest.mark.slow
def test_wandb_online_without_a_login_is_one_line_saying_what_to_do(
    ema_run: tuple[Path, Path], tmp_path: Path
) -> None:
    """Item 12: train.logger=wandb, online, no API key: W&B's traceback."""
    pytest.importorskip("wandb")
    project, _ = ema_run
    home = tmp_path / "home"  # no ~/.netrc, no W&B settings: not logged in
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(HOME=str(home), PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")
    settings = (*TINY, "train.max_steps=1", "train.logger=wandb", f"train.out_dir={tmp_path}/r")
    result = subprocess.run(
        [sys.executable, "-m", EMA_PKG, "train", *sets(*settings)],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert (
        result.stderr.startswith("error: W&B cannot start a run (")
        and result.stderr.count("\n") == 1
    ), result.stderr
    assert "`wandb login`" in result.stderr and "WANDB_MODE=offline" in result.stderr


def test_pretrained_model_kinds_start_from_their_own_training_defaults(
    default_project: Path, tmp_path: Path
) -> None:
    """Item 19: hf-encoder and hf-vision trained at the scratch default train.lr = 0.001."""
    found = {}
    for task, model, dataset in [
        ("sequence-classification", "hf-encoder", "hf-text"),
        ("image-classification", "hf-vision", "synthetic"),
    ]:
        project = generate(
            tmp_path / model, "pre", task=task, model=model, dataset=dataset, features=("optim",)
        )
        found[model] = tomllib.loads((project / "configs/default.toml").read_text())["train"]
    expected = {"hf-encoder": 2e-5, "hf-vision": 5e-5}
    for model, train in found.items():
        assert (train["lr"], train["warmup_steps"]) == (expected[model], 100), model
        assert train["head_lr_multiplier"] == 10.0, model
    scratch = tomllib.loads((default_project / "configs/default.toml").read_text())["train"]
    assert (scratch["lr"], scratch["warmup_steps"]) == (0.001, 0)  # a model trained from scratch
