"""Issue 30: the `slurm` feature against a real Slurm (a one-node cluster: .ci/slurm-up.sh).

A job with a 1-minute time limit, warned 40 s before, trains longer than its warning: it is
signalled, writes last.pt, requeues itself, resumes and finishes with weights equal to an
uninterrupted run's, and metrics.csv holds each step once. The same for 2 processes under
torchrun. Without scontrol the run still checkpoints and one line says why it did not requeue.
A sweep as a 2-task job array shares one study; a task cancelled mid-trial loses no trial.
Without a cluster these tests skip, loudly.
"""

from __future__ import annotations

import contextlib
import csv
import os
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import optuna
import pytest
import torch
from helpers import SLOW_DATASET, generate

PKG = "slurm_proj"
STEPS = 100
SETTINGS = [
    "data.num_samples=64",
    "data.image_size=16",
    "model.width=8",
    "train.batch_size=8",
    "train.epochs=1000",
    f"train.max_steps={STEPS}",
    "train.device=cpu",
    "train.checkpoint_every=25",
    "train.log_every=10",
]
# Slow until the first requeue: 0.8 s a step, so the first start cannot finish its 100 steps
# inside the 1-minute limit and Slurm's warning (due at 20 s, sent up to a minute late or
# early by its timer) always comes first; the restarts run at full speed. The samples are
# the same either way.
SLOW = SLOW_DATASET.replace(
    'float(os.environ.get("SLOW_SAMPLE_S", "0.008"))',
    '0.1 if os.environ.get("SLURM_RESTART_COUNT", "0") == "0" else 0.001',
)
assert "SLURM_RESTART_COUNT" in SLOW and "import os" in SLOW
WARNED = ["--time=1", "--signal=B:USR1@40"]  # the README's commands
SPACE = """
[train]
epochs = 1  # the pruner waits 2 epochs: every trial completes

[sweep]
"train.lr" = { low = 1e-3, high = 3e-2, log = true }
"""


def cluster_problem() -> str | None:
    """Why no job can run here (None: the local cluster answers and its node is idle)."""
    if not shutil.which("sbatch"):
        return "sbatch is not installed"
    result = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True)
    states = result.stdout.split()
    if result.returncode != 0 or not {"idle", "mix", "alloc"} & set(states):
        return f"sinfo: {(result.stderr or result.stdout).strip() or 'no node up'}"
    return None


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    problem = cluster_problem()
    if problem:
        reason = f"SLURM TESTS SKIPPED: no local Slurm cluster ({problem}); run .ci/slurm-up.sh"
        warnings.warn(reason, stacklevel=1)  # in the summary of every run, not only with -rs
        pytest.skip(reason)
    features = ("slurm", "sweep")
    path = generate(tmp_path_factory.mktemp("slurm"), name="slurm-proj", features=features)
    (path / "src" / PKG / "data" / "slowsynthetic.py").write_text(SLOW)
    (path / "configs" / "tiny-sweep.toml").write_text(SPACE)
    return path


def job_env(project: Path, path: str | None = None) -> dict[str, str]:
    """What sbatch passes on to the job: the test's interpreter first on PATH, src/ importable."""
    bin_dir = str(Path(sys.executable).parent)
    return dict(
        os.environ,
        PATH=f"{bin_dir}:{path if path is not None else os.environ['PATH']}",
        PYTHONPATH=str(project / "src"),
        OMP_NUM_THREADS="1",
    )


def submit(project: Path, env: dict[str, str], *args: str, settings: list[str] = SETTINGS) -> str:
    sets = [a for s in ["data.name=slowsynthetic", *settings] for a in ("--set", s)]
    result = subprocess.run(
        # --oversubscribe: the tests' jobs share the node's 2 CPUs (the array needs 2 at once)
        [shutil.which("sbatch") or "sbatch", "--parsable", "--oversubscribe", *args, *sets],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().split(";")[0]


def job(job_id: str) -> dict[str, str]:
    """The job's fields as scontrol shows them (JobState, Restarts, ExitCode, ...)."""
    shown = subprocess.run(
        ["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True
    )
    return dict(f.split("=", 1) for f in shown.stdout.split() if "=" in f)


def wait_until_done(job_id: str, timeout: float = 400) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fields = job(job_id)
        if fields.get("JobState") in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"):
            return fields
        time.sleep(2)
    subprocess.run(["scancel", job_id])
    raise AssertionError(f"job {job_id} did not end in {timeout} s: {job(job_id)}")


def reference(
    project: Path, out: Path, *launcher: str, settings: list[str] = SETTINGS
) -> subprocess.Popen[str]:
    """The same training, uninterrupted, outside Slurm (the same samples, fetched at once)."""
    sets = [a for s in ["data.name=synthetic", *settings] for a in ("--set", s)]
    command = [*launcher, "-m", PKG, "train", "--set", f"train.out_dir={out}", *sets]
    return subprocess.Popen(command, cwd=project, env=job_env(project), text=True)


def logs(project: Path, job_id: str) -> dict[int, str]:
    """slurm/logs/NAME-ID-rN.log by restart N."""
    found = (project / "slurm" / "logs").glob(f"*-{job_id}-r*.log")
    return {int(p.stem.rsplit("-r", 1)[1]): p.read_text() for p in found}


def assert_resumed_exactly(project: Path, job_id: str, name: str, ref: Path) -> None:
    fields = wait_until_done(job_id)
    every_log = "\n".join(logs(project, job_id).values())
    assert fields["JobState"] == "COMPLETED", (fields, every_log)
    assert int(fields["Restarts"]) >= 1, every_log
    first = logs(project, job_id)[0]
    assert "slurm: SIGUSR1 received" in first and f"requeued job {job_id}" in first, first
    assert "restart 1 on" in logs(project, job_id)[1]
    out = project / "runs" / f"{name}-{job_id}"
    got = torch.load(out / "last.pt", weights_only=True)
    want = torch.load(ref / "last.pt", weights_only=True)
    assert got["step"] == want["step"] > 0
    model, expected = got["model_state_dict"], want["model_state_dict"]
    assert [k for k in expected if not torch.equal(model[k], expected[k])] == []
    with open(out / "metrics.csv", encoding="utf-8") as handle:
        keys = [(int(row["step"]), row["split"]) for row in csv.DictReader(handle)]
    assert len(keys) == len(set(keys)) and keys == sorted(keys, key=lambda k: k[0]), keys


@pytest.mark.slow
def test_a_warned_job_checkpoints_requeues_itself_and_resumes_exactly(
    project: Path, tmp_path: Path
) -> None:
    job_id = submit(project, job_env(project), *WARNED, "--cpus-per-task=1", "slurm/train.sbatch")
    plain = reference(project, tmp_path / "reference", sys.executable)
    assert plain.wait(timeout=300) == 0
    assert_resumed_exactly(project, job_id, f"{PKG}-train", tmp_path / "reference")


@pytest.mark.slow
def test_a_warned_torchrun_job_of_two_processes_requeues_and_resumes_exactly(
    project: Path, tmp_path: Path
) -> None:
    env = dict(job_env(project), NPROC="2")
    shorter = [*SETTINGS, "train.max_steps=80"]  # still far more than the first start's minute
    args = [*WARNED, "--cpus-per-task=1", "slurm/train-node.sbatch"]
    job_id = submit(project, env, *args, settings=shorter)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    plain = reference(project, tmp_path / "reference", *torchrun, settings=shorter)
    assert plain.wait(timeout=300) == 0
    assert_resumed_exactly(project, job_id, f"{PKG}-node", tmp_path / "reference")


@pytest.mark.slow
def test_without_scontrol_the_run_checkpoints_and_says_why_it_did_not_requeue(
    project: Path, tmp_path: Path
) -> None:
    tools = tmp_path / "bin"  # a PATH with what the scripts need, and no scontrol
    tools.mkdir()
    for tool in ("bash", "mkdir", "hostname"):
        (tools / tool).symlink_to(shutil.which(tool) or tool)
    env = job_env(project, path=str(tools))
    job_id = submit(project, env, "--time=5", "--cpus-per-task=1", "slurm/train.sbatch")
    out = project / "runs" / f"{PKG}-train-{job_id}"
    deadline = time.monotonic() + 120
    while not (out / "metrics.csv").exists():  # training has begun: warn it as Slurm would
        assert time.monotonic() < deadline and job(job_id)["JobState"] in ("PENDING", "RUNNING")
        time.sleep(0.5)
    subprocess.run(["scancel", "--batch", "--signal=USR1", job_id], check=True)

    fields = wait_until_done(job_id)

    log = logs(project, job_id)[0]
    said = [line for line in log.splitlines() if "not requeued" in line]
    assert said == [
        "slurm: stopped by SIGUSR1; not requeued: scontrol is not on PATH (submit again to resume)"
    ], log
    assert fields["JobState"] == "FAILED" and fields["ExitCode"] == "138:0", fields
    assert 0 < torch.load(out / "last.pt", weights_only=True)["step"] < STEPS


@pytest.mark.slow
def test_a_sweep_job_array_shares_one_study_and_a_cancelled_task_loses_no_trial(
    project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "sweep"
    env = dict(job_env(project), TRIALS="4", OUT=str(out))
    args = ["--array=0-1", "--time=5", "--cpus-per-task=1", "slurm/sweep.sbatch"]
    tiny = [s for s in SETTINGS if not s.startswith(("train.epochs", "train.max_steps"))]
    tiny += ["data.num_samples=128", "train.log_every=4"]  # 16 steps a trial, rows as they go
    job_id = submit(project, env, *args, "--config", "configs/tiny-sweep.toml", settings=tiny)
    storage = f"sqlite:///{out / 'study.db'}"
    deadline = time.monotonic() + 120
    while True:  # both tasks run a trial, one has trained a little: cancel task 0 mid-trial
        states = [job(f"{job_id}_{task}").get("JobState") for task in (0, 1)]
        assert time.monotonic() < deadline and set(states) <= {"PENDING", "RUNNING"}, states
        with contextlib.suppress(Exception):  # no database yet, or a study being made
            running = optuna.load_study(study_name="sweep", storage=storage).get_trials(
                states=(optuna.trial.TrialState.RUNNING,)
            )
            if len(running) == 2 and list(out.glob("trial-*/metrics.csv")):
                break
        time.sleep(0.5)
    subprocess.run(["scancel", f"{job_id}_0"], check=True)

    ended = [wait_until_done(f"{job_id}_{task}")["JobState"] for task in (0, 1)]

    assert ended == ["CANCELLED", "COMPLETED"], logs(project, job_id)
    trials = optuna.load_study(study_name="sweep", storage=storage).get_trials()
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    folders = [f"trial-{t.user_attrs.get('continues', t.number):04d}" for t in complete]
    assert len(complete) >= 4 and len(set(folders)) == len(folders), trials
    assert any("continues" in t.user_attrs for t in complete), "the cancelled trial continued"
    for folder in folders:  # each epoch trained once, a continued trial's too
        log = (out / folder / "train.log").read_text()
        assert log.count("epoch 1/1 ") == 1, log


def test_the_scripts_are_valid_bash_with_signal_requeue_and_settings_on_top(
    tmp_path: Path,
) -> None:
    """Without a cluster: every script parses (bash -n) and asks for the warning and requeue."""
    path = generate(tmp_path, name="slurm-proj", features=("slurm", "sweep"))
    scripts = sorted((path / "slurm").glob("*.s*"))
    assert [p.name for p in scripts] == [
        "run.sh",
        "sweep.sbatch",
        "train-node.sbatch",
        "train-nodes.sbatch",
        "train.sbatch",
    ]
    for script in scripts:
        subprocess.run(["bash", "-n", str(script)], check=True)
        text = script.read_text()
        assert "set -euo pipefail" in text or "set -uo pipefail" in text, script.name
        if script.suffix == ".sbatch":
            assert "#SBATCH --signal=B:USR1@90" in text and "#SBATCH --requeue" in text
            assert "exec bash slurm/run.sh" in text and '"$@"' in text, script.name
