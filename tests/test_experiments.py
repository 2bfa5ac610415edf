"""Issue 20: several runs of one config on a generated project. Optuna sweeps on a real
SQLite database (two processes, a killed process, pruned and failed trials), seed repeats,
cross-validation, and MLflow tracking read back with MLflow's own client.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import torch
from helpers import SLOW_DATASET, alive, generate, kill_tree, process_tree
from mlflow import MlflowClient

pytestmark = pytest.mark.slow

PKG = "exp_proj"
TINY = [
    "data.num_samples=64",
    "data.image_size=8",
    "data.num_classes=2",
    "model.width=4",
    "train.batch_size=8",
    "train.device=cpu",
]
SPACE = """
[train]
epochs = 3

[sweep]
"train.lr" = { low = 1e-7, high = 3e-2, log = true }
"train.batch_size" = { choices = [8, 1024] }
"""
# For processes that join a study (--resume): their sampler is unseeded, so every value must
# train (the first two complete trials are never pruned: a best config always exists).
SHARED_SPACE = SPACE.replace("[8, 1024]", "[8, 16]")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    features = ("experiments", "sweep", "mlflow")
    path = generate(tmp_path_factory.mktemp("experiments"), name="exp-proj", features=features)
    (path / "src" / PKG / "data" / "slowsynthetic.py").write_text(SLOW_DATASET)
    (path / "configs" / "tiny-sweep.toml").write_text(SPACE)
    (path / "configs" / "shared-sweep.toml").write_text(SHARED_SPACE)
    return path


def env(project: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")


def command(*args: str, sets: list[str] = TINY) -> list[str]:
    return [sys.executable, "-m", PKG, *args, *[a for s in sets for a in ("--set", s)]]


def run(project: Path, *args: str, sets: list[str] = TINY) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(*args, sets=sets),
        cwd=project,
        env=env(project),
        capture_output=True,
        text=True,
        timeout=600,
    )


def start(project: Path, *args: str, sets: list[str] = TINY) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command(*args, sets=sets),
        cwd=project,
        env=env(project),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a cleanup's kill of the group takes an orphaned trial too
    )


def study(out: Path, name: str = "sweep") -> optuna.Study:
    return optuna.load_study(study_name=name, storage=f"sqlite:///{out / 'study.db'}")


def test_two_sweep_processes_share_a_study_and_the_best_config_trains(
    project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "sweep"
    args = ("sweep", "--trials", "4", "--out", str(out), "--resume")
    workers = [start(project, *args, "--config", "configs/shared-sweep.toml") for _ in range(2)]
    outputs = [worker.communicate(timeout=600) for worker in workers]
    assert [w.returncode for w in workers] == [0, 0], outputs
    trials = study(out).get_trials()
    assert 4 <= len(trials) <= 5  # two processes may each start the last trial
    pids = {t.user_attrs["worker"] for t in trials}
    assert len(pids) == 2, "both processes ran trials"
    assert sorted(p.name for p in out.glob("trial-*")) == [f"trial-{t.number:04d}" for t in trials]
    assert all(t.state.name in ("COMPLETE", "PRUNED", "FAIL") for t in trials)
    rows = list(csv.DictReader(open(out / "trials.csv", encoding="utf-8")))
    assert [int(r["trial"]) for r in rows] == [t.number for t in trials]
    assert "best: trial" in outputs[0][0] + outputs[1][0]
    best = run(project, "train", "--config", str(out / "best.toml"), sets=["train.max_steps=1"])
    assert best.returncode == 0, best.stderr
    assert (out / "best" / "last.pt").exists()


def test_pruned_and_failed_trials_are_recorded_as_such(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    out.mkdir()
    storage = f"sqlite:///{out / 'study.db'}"
    prepared = optuna.create_study(study_name="sweep", storage=storage, direction="maximize")
    for lr, batch in [(3e-2, 8), (3e-2, 8), (1e-7, 8), (3e-2, 1024)]:
        prepared.enqueue_trial({"train.lr": lr, "train.batch_size": batch})
    args = ("sweep", "--trials", "4", "--out", str(out), "--config", "configs/tiny-sweep.toml")
    sets = [*TINY, "data.name=slowsynthetic"]  # epochs of ~0.5 s: the sweep sees each one
    result = run(project, *args, "--resume", sets=sets)
    assert result.returncode == 0, result.stdout + result.stderr
    states = [t.state.name for t in study(out).get_trials()]
    assert states == ["COMPLETE", "COMPLETE", "PRUNED", "FAIL"], result.stdout
    assert "trial 2: pruned at epoch 2" in result.stdout
    failed = study(out).trials[3].user_attrs["error"]
    assert failed.startswith("error: the training split has 64 samples, fewer than one batch")
    again = run(project, *args, sets=sets)  # without --resume an existing study stays as it is
    assert again.returncode == 1
    assert again.stderr.strip() == (
        f"error: study 'sweep' already exists in {storage}; continue it with --resume"
    )


def test_a_killed_sweep_resumes_its_trial_without_losing_or_repeating_any(
    project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "sweep"
    sets = [*TINY, "data.name=slowsynthetic"]
    args = ("sweep", "--trials", "2", "--out", str(out), "--config", "configs/tiny-sweep.toml")
    proc = start(project, *args, sets=sets)
    deadline = time.monotonic() + 300
    try:  # trial 1 has finished its first epoch
        while not (out / "trial-0001" / "last.pt").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
    finally:
        kill_tree(proc)  # the trial's process too, gone before the resume takes its run
        proc.communicate()
    resumed = run(project, *args, "--resume", sets=sets)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    trials = study(out).get_trials()
    states = [(t.number, t.state.name, t.user_attrs.get("continues")) for t in trials]
    assert states[0] == (0, "COMPLETE", None)
    assert states[1][:2] == (1, "FAIL")  # the killed process's trial ...
    assert states[2] == (2, states[2][1], 1)  # ... continued, and nothing more
    assert states[2][1] in ("COMPLETE", "PRUNED") and len(states) == 3
    log = (out / "trial-0001" / "train.log").read_text()
    assert f"resuming from {out / 'trial-0001' / 'last.pt'}" in log
    assert (out / "trial-0000" / "train.log").read_text().count("epoch 1/3") == 1


def test_repeat_reports_each_seed_and_the_spread_and_continues(
    project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "repeat"
    sets = [*TINY, "train.epochs=2"]
    first = run(project, "repeat", "--seeds", "1,2", "--out", str(out), sets=sets)
    assert first.returncode == 0, first.stderr
    assert "mean +/- std over 2 runs: loss" in first.stdout
    rows = list(csv.DictReader(open(out / "results.csv", encoding="utf-8")))
    assert [r["seed"] for r in rows] == ["1", "2", "mean", "std"]
    accuracies = [float(r["accuracy"]) for r in rows[:2]]
    assert float(rows[2]["accuracy"]) == pytest.approx(sum(accuracies) / 2, abs=1e-6)
    for seed in (1, 2):
        saved = torch.load(out / f"seed-{seed}" / "last.pt", weights_only=True)
        assert saved["config"]["train"]["seed"] == seed and saved["epoch"] == 2
    again = run(project, "repeat", "--seeds", "1,2", "--out", str(out), sets=sets)
    assert again.returncode == 0 and again.stdout.count("resuming from") == 2
    assert list(csv.DictReader(open(out / "results.csv", encoding="utf-8"))) == rows


def test_cross_validation_folds_are_stratified_saved_and_each_one_trains(
    project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "cv"
    sets = [*TINY, "train.epochs=1"]
    result = run(project, "cv", "--folds", "3", "--out", str(out), sets=sets)
    assert result.returncode == 0, result.stderr
    fold_of = json.loads((out / "folds.json").read_text())["fold_of_sample"]
    script = (
        f"from {PKG}.config import load_config; from {PKG}.data import build_data; "
        f"c = load_config(None, {TINY!r}); "
        "print(build_data(c.data, c.train.seed).train_targets().tolist())"
    )
    probe = subprocess.run(
        [sys.executable, "-c", script], env=env(project), capture_output=True, text=True
    )
    labels = json.loads(probe.stdout)
    for label in set(labels):  # each class spread over the folds within one sample
        per_fold = [sum(1 for i, f in enumerate(fold_of) if f == k and labels[i] == label)
                    for k in range(3)]  # fmt: skip
        assert max(per_fold) - min(per_fold) <= 1, (label, per_fold)
    rows = list(csv.DictReader(open(out / "results.csv", encoding="utf-8")))
    assert [r["fold"] for r in rows] == ["0", "1", "2", "mean", "std"]
    sizes = [int(r["num_samples"]) for r in rows[:3]]
    assert sizes == [fold_of.count(k) for k in range(3)]  # each fold validates on itself
    other = run(project, "cv", "--folds", "3", "--seed", "7", "--out", str(out), sets=sets)
    assert other.returncode == 1
    assert other.stderr.startswith(f"error: {out / 'folds.json'} holds another fold assignment")


def test_mlflow_logs_params_metrics_artifacts_and_a_resumed_run_continues_it(
    project: Path, tmp_path: Path
) -> None:
    sets = [*TINY, "train.epochs=2", "train.logger=mlflow", "train.log_every=2"]
    sets += [f"train.out_dir={tmp_path / 'run'}"]
    first = run(project, "train", sets=[*sets, "train.max_steps=5"])
    assert first.returncode == 0, first.stderr
    run_id = torch.load(tmp_path / "run" / "last.pt", weights_only=True)["mlflow_run_id"]
    second = run(project, "train", sets=[*sets, "train.resume=auto"])
    assert second.returncode == 0, second.stderr
    assert torch.load(tmp_path / "run" / "last.pt", weights_only=True)["mlflow_run_id"] == run_id
    client = MlflowClient(f"sqlite:///{project / 'mlruns' / 'mlflow.db'}")
    logged = client.get_run(run_id)
    assert logged.info.status == "FINISHED"
    assert logged.data.params["train.logger"] == "mlflow"
    assert logged.data.params["train.max_steps"] == "5"  # params are the first run's
    steps = sorted(m.step for m in client.get_metric_history(run_id, "train/loss"))
    assert steps == [2, 4, 5, 6, 8, 10, 12, 14, 16]  # both halves of the run
    assert sorted(m.step for m in client.get_metric_history(run_id, "val/accuracy")) == [5, 8, 16]
    artifacts = {a.path for a in client.list_artifacts(run_id)}
    assert {"best.pt", "last.pt", "config.toml"} <= artifacts


def test_a_sweep_killed_alone_takes_its_trial_with_it(project: Path, tmp_path: Path) -> None:
    """kill -9 of the sweep process only (not its group): the trial's train process gets
    SIGTERM, saves last.pt and ends, so no orphan holds the out_dir that `sweep --resume`
    continues (the test above resumes a killed sweep)."""
    out = tmp_path / "sweep"
    sets = [*TINY, "data.name=slowsynthetic", "train.epochs=500"]  # minutes, left alone
    args = ("sweep", "--trials", "1", "--out", str(out), "--config", "configs/tiny-sweep.toml")
    proc = start(project, *args, sets=sets)
    deadline = time.monotonic() + 300
    try:
        while len(process_tree(proc.pid)) < 2 or not (out / "trial-0000" / "last.pt").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        trial = process_tree(proc.pid)[1]
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
        soon = time.monotonic() + 30
        while alive(trial) and time.monotonic() < soon:
            time.sleep(0.05)
        assert not alive(trial), "the trial trained on after its sweep was killed"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert "SIGTERM: stopped at" in (out / "trial-0000" / "train.log").read_text()


BAD_SPACE = """
[sweep]
"train.lr" = { low = 1e-4, high = 1e-2, log = true, step = 1e-3 }
"train.warmup_steps" = { low = 0, high = 100, step = 0 }
"train.weight_decay" = { low = 0.0, high = "x" }
"train.epochs" = { low = 1, high = 2.5 }
"""


@pytest.mark.parametrize(
    "text, lines",
    [
        (
            BAD_SPACE,
            [
                "[sweep] train.lr: step and log = true do not go together: choose one",
                "[sweep] train.warmup_steps: step must be above 0",
                "[sweep] train.weight_decay: low, high and step must be numbers",
                "[sweep] train.epochs: train.epochs is a whole number: low, high and step must",
            ],
        ),
        ("sweep = 5\n", ["sweep must be a table, [sweep], of keys to search"]),
    ],
)
def test_a_bad_search_space_is_refused_line_by_line_before_any_study(
    project: Path, tmp_path: Path, text: str, lines: list[str]
) -> None:
    space = tmp_path / "bad.toml"
    space.write_text(text, encoding="utf-8")
    out = tmp_path / "sweep"

    result = run(project, "sweep", "--trials", "1", "--out", str(out), "--config", str(space))

    assert result.returncode == 1 and "Traceback" not in result.stderr
    said = result.stderr.strip().splitlines()
    assert len(said) == len(lines) and all(line in s for line, s in zip(lines, said, strict=True))
    assert not out.exists()  # no study, no failed trial: fix the file and run again


def test_a_sweep_where_no_trial_completes_exits_1(project: Path, tmp_path: Path) -> None:
    space = tmp_path / "never.toml"
    space.write_text('[sweep]\n"train.batch_size" = { choices = [4096] }\n', encoding="utf-8")
    out = tmp_path / "sweep"

    result = run(project, "sweep", "--trials", "1", "--out", str(out), "--config", str(space))

    assert result.returncode == 1, result.stdout + result.stderr
    assert "trial 0: failed: error: the training split has 64 samples" in result.stdout
    assert "no trial completed" in result.stdout
