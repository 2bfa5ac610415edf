"""`sweep`: a hyperparameter search with Optuna (pip install -e '.[sweep]').

The search space is the [sweep] table of the config file (default configs/sweep.toml):

    [sweep]
    "train.lr" = { low = 1e-4, high = 1e-2, log = true }  # a number from a range
    "train.warmup_steps" = { low = 0, high = 100, step = 20 }  # an int: the key's type
    "model.width" = { choices = [16, 32, 64] }  # one of these

Each trial is a full `train` process in OUT/trial-NNNN with the config plus the trial's
values. Its validation metric (the one that picks best.pt) at each epoch feeds a median
pruner, which stops a trial worse than the median of earlier trials at the same epoch.
The study lives in a database: OUT/study.db (SQLite) by default, or any SQLAlchemy URL
(--storage postgresql://...) that several machines share. Every `sweep --resume` process
runs other trials of the same study; the trial of a process that was killed is continued
from its last checkpoint by the next process that looks. At the end: a table of the
trials (also OUT/trials.csv) and the best trial's config, OUT/best.toml.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .config import Config, ConfigError, load_config, to_toml, valid_keys
from .runtime import DistInfo
from .stopping import EXIT_STATUS, StopSignals
from .tasks import Task, get_task

SWEEP_FILE = Path("configs/sweep.toml")  # the default config of `sweep`: a search space
HEARTBEAT_S = 2  # a process running a trial records a heartbeat in the study this often;
GRACE_S = 10  # a trial without one for this long is taken as dead and continued elsewhere


class SweepStopped(Exception):
    """A stop signal reached the sweep; its trial was checkpointed and will be continued."""


def run_sweep(args: argparse.Namespace) -> int:
    """`sweep`: the study of --config (default configs/sweep.toml) and the overrides."""
    config_file = Path(args.config or SWEEP_FILE)
    config = load_config(config_file, args.overrides)
    out = Path(args.out or f"runs/{args.study}")
    return sweep(config, config_file, args.trials, out, args.storage, args.study, args.resume)


def sweep(
    config: Config,
    config_file: Path,
    trials: int,
    out: Path,
    storage: str | None,
    study_name: str,
    resume: bool,
) -> int:
    """Run trials until the study holds `trials` of them, finished; returns the exit status."""
    optuna = _import_optuna()
    space = search_space(config_file, config)
    out.mkdir(parents=True, exist_ok=True)
    url = storage or f"sqlite:///{(out / 'study.db').resolve()}"
    study = open_study(optuna, url, study_name, resume, config)
    signals = StopSignals(DistInfo())
    task = get_task(config.task, config.train.monitor)
    objective = Objective(config, space, out, task, signals)
    print(f"study {study_name!r} in {url}; trials in {out}")
    with signals.installed():
        while not signals.received:
            optuna.storages.fail_stale_trials(study)  # a killed process's trial: continued
            taken, waiting, running = count(study.get_trials(deepcopy=False))
            if taken < trials or waiting:
                try:
                    study.optimize(objective, n_trials=1)
                except SweepStopped:
                    break
            elif running:  # other processes' trials: wait for them (or for them to die)
                time.sleep(HEARTBEAT_S)
            else:
                break
    if signals.received:
        print(f"{signals.received.name}: sweep stopped; continue it with --resume")
        return EXIT_STATUS[signals.received.name]
    return 0 if report(study, space, objective.task, out, config) else 1


def count(trials: list[Any]) -> tuple[int, int, int]:
    """(trials taken, waiting, running): a continued trial and its continuation take one."""
    continuations = sum("continues" in t.user_attrs for t in trials)
    states = [t.state.name for t in trials]
    return len(trials) - continuations, states.count("WAITING"), states.count("RUNNING")


def continue_later(study: Any, trial: Any) -> None:
    """Queue a trial again with the same values and folder: it resumes from its checkpoint."""
    origin = trial.user_attrs.get("continues", trial.number)
    study.enqueue_trial(trial.params, user_attrs={"continues": origin})


def _import_optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise ConfigError("sweep needs optuna: pip install -e '.[sweep]'") from None
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # the sweep prints its own lines
    # Optuna marks heartbeats experimental; the sweep relies on them knowingly
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    return optuna


def open_study(optuna: Any, url: str, name: str, resume: bool, config: Config) -> Any:
    """The study `name` in the database at `url`: new, or (with --resume) continued/joined."""
    storage, exists = connect(optuna, url, name)
    if exists and not resume:
        raise ConfigError(f"study {name!r} already exists in {url}; continue it with --resume")
    task = get_task(config.task, config.train.monitor)
    return optuna.create_study(
        storage=storage,
        study_name=name,
        direction="maximize" if task.is_better(1.0, 0.0) else "minimize",
        # a new study samples reproducibly; processes that join or continue one draw apart
        sampler=optuna.samplers.TPESampler(seed=None if resume else config.train.seed),
        # compare from the third trial on, and never at a trial's first epoch
        pruner=optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=2),
        load_if_exists=True,
    )


def connect(optuna: Any, url: str, name: str, tries: int = 3) -> tuple[Any, bool]:
    """The study database (its tables made if new) and whether it holds study `name`."""
    engine = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}
    problem = ""
    for attempt in range(tries):
        time.sleep(attempt)  # a retry: another process may be making the tables just now
        try:
            storage = optuna.storages.RDBStorage(
                url,
                engine_kwargs=engine,
                heartbeat_interval=HEARTBEAT_S,
                grace_period=GRACE_S,
                heartbeat_stale_trial_callback=continue_later,
            )
            return storage, name in optuna.study.get_all_study_names(storage)
        except Exception as exc:  # a bad URL, a missing driver, a server that does not answer
            problem = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    raise ConfigError(f"--storage {url}: {problem}")


def search_space(config_file: Path, config: Config) -> dict[str, dict[str, Any]]:
    """The [sweep] table, checked before anything is created: known keys, a range or
    choices each, values that make a valid config. Every problem is one line."""
    table = tomllib.loads(config_file.read_text(encoding="utf-8")).get("sweep", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{config_file}: sweep must be a table, [sweep], of keys to search")
    if not table:
        raise ConfigError(f"{config_file} has no [sweep] table: nothing to search")
    problems = [
        f"{config_file}: [sweep] {key}: {problem}"
        for key, spec in table.items()
        for problem in range_problems(key, spec, config)
    ]
    if problems:
        raise ConfigError("\n".join(problems))
    return table


def range_problems(key: str, spec: Any, config: Config) -> list[str]:
    """What is wrong with one entry of [sweep] (nothing: [])."""
    if key not in valid_keys(config) or key in ("task", "train.out_dir", "train.resume"):
        return ["not a config key a trial can vary"]
    keys = set(spec) if isinstance(spec, dict) else set()
    if keys == {"choices"}:
        choices = spec["choices"]
        if not choices or not isinstance(choices, list):
            return ["choices must be a non-empty list of values"]
        return [problem for value in choices for problem in value_problems(config, key, value)]
    if not {"low", "high"} <= keys <= {"low", "high", "log", "step"}:
        return ["expects { low = .., high = .. } (with log or step) or { choices = [..] }"]
    low, high, step = spec["low"], spec["high"], spec.get("step")
    numbers = [v for v in (low, high, step) if v is not None]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in numbers):
        return ["low, high and step must be numbers"]
    problems = [] if low < high else ["low must be below high"]
    if spec.get("log") and step is not None:
        problems.append("step and log = true do not go together: choose one")
    if spec.get("log") and not low > 0:
        problems.append("a log range needs low > 0")
    if step is not None and not step > 0:
        problems.append("step must be above 0")
    whole = isinstance(getattr(getattr(config, key.split(".")[0]), key.split(".")[1]), int)
    if whole and not all(isinstance(v, int) for v in numbers):
        problems.append(f"{key} is a whole number: low, high and step must be too")
    if problems:
        return problems
    return [p for value in (low, high) for p in value_problems(config, key, value)]


def value_problems(config: Config, key: str, value: Any) -> list[str]:
    try:
        with_values(config, {key: value})
    except ConfigError as exc:
        return [str(exc).removeprefix("sweep: ")]
    return []


def with_values(config: Config, values: dict[str, Any], where: str = "sweep") -> Config:
    """The config with some keys set, checked as any --set is."""
    try:
        return load_config(None, [f"{k}={json.dumps(v)}" for k, v in values.items()], config)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


class Objective:
    """One trial: a `train` process in its folder, watched epoch by epoch for the pruner."""

    def __init__(
        self,
        config: Config,
        space: dict[str, dict[str, Any]],
        out: Path,
        task: Task,
        signals: StopSignals,
    ) -> None:
        self.config, self.space, self.out, self.task = config, space, out, task
        self.signals = signals

    def __call__(self, trial: Any) -> float:
        folder = self.out / f"trial-{trial.user_attrs.get('continues', trial.number):04d}"
        values = {key: suggest(trial, key, spec, self.config) for key, spec in self.space.items()}
        trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")
        config = with_values(self.config, {**values, "train.out_dir": str(folder)})
        config.train.resume = "auto"  # a continued trial goes on from its checkpoint
        folder.mkdir(parents=True, exist_ok=True)
        trial_file = folder / "trial.toml"
        trial_file.write_text(to_toml(config), encoding="utf-8")
        command = [sys.executable, "-m", __package__, "train", "--config", str(trial_file)]
        with open(folder / "train.log", "a", encoding="utf-8") as log:
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with(os.getpid())
            )
            values_by_epoch = self.watch(trial, process, folder / "metrics.csv")
        if process.returncode != 0:
            trial.set_user_attr("error", last_line(folder / "train.log"))
            print(f"trial {trial.number}: failed: {trial.user_attrs['error']}")
            return math.nan  # recorded as a failed trial
        best = None
        for value in values_by_epoch:
            best = value if self.task.is_better(value, best) else best
        if best is None:
            return math.nan  # no evaluation: recorded as a failed trial
        print(f"trial {trial.number}: {self.task.monitor} {best:.4f} with {values}")
        return best

    def watch(self, trial: Any, process: subprocess.Popen, metrics: Path) -> list[float]:
        """Report each epoch's metric as it appears; prune or stop the process as needed."""
        import optuna

        reported: list[float] = []
        while True:
            running = process.poll() is None
            for value in val_metric(metrics, self.task.monitor)[len(reported) :]:
                reported.append(value)
                trial.report(value, step=len(reported))
                if running and trial.should_prune():  # judged at each epoch, in order
                    stop(process)
                    print(f"trial {trial.number}: pruned at epoch {len(reported)}")
                    raise optuna.TrialPruned()
            # the scheduler may signal the trial's process too (scancel, a time limit):
            # ended by it, the trial is continued as well, not recorded as failed
            if self.signals.received and (running or process.returncode):
                stop(process)  # it saves last.pt
                trial.set_user_attr("interrupted", self.signals.received.name)
                continue_later(trial.study, trial)
                raise SweepStopped()
            if not running:
                return reported
            time.sleep(0.2)


def suggest(trial: Any, key: str, spec: dict[str, Any], config: Config) -> Any:
    if "choices" in spec:
        return trial.suggest_categorical(key, spec["choices"])
    section, _, name = key.partition(".")
    log = spec.get("log", False)
    if isinstance(getattr(getattr(config, section), name), int):
        return trial.suggest_int(key, spec["low"], spec["high"], step=spec.get("step", 1), log=log)
    return trial.suggest_float(key, spec["low"], spec["high"], step=spec.get("step"), log=log)


def die_with(sweep_pid: int) -> Callable[[], None] | None:
    """Run in a trial's process before it starts: on Linux it gets SIGTERM when the sweep
    dies, even by SIGKILL, so no trial trains on alone (holding its out_dir); it saves
    last.pt, and the next `sweep --resume` continues it. Elsewhere: None."""
    if not sys.platform.startswith("linux"):
        return None

    def arrange() -> None:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != sweep_pid:  # the sweep died before that: stop now
            os.kill(os.getpid(), signal.SIGTERM)

    return arrange


def stop(process: subprocess.Popen) -> None:
    """SIGTERM: the run finishes its step, saves last.pt and exits."""
    process.send_signal(signal.SIGTERM)
    process.wait()


def val_metric(path: Path, metric: str) -> list[float]:
    """The metric of every epoch-end evaluation in a run's metrics.csv so far."""
    if not path.exists():
        return []
    rows = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")))
    return [float(row[metric]) for row in rows if row.get("split") == "val" and row.get(metric)]


def last_line(path: Path) -> str:
    lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return lines[-1] if lines else "no output"


def report(study: Any, space: dict[str, Any], task: Task, out: Path, config: Config) -> bool:
    """The trials as a table and OUT/trials.csv; the best trial's config as OUT/best.toml.
    False when no trial completed (the sweep then exits 1)."""
    columns = ["trial", "state", task.monitor, *space, "note"]
    rows = [trial_row(t, task.monitor) for t in study.get_trials(deepcopy=False)]
    print("  ".join(f"{c:>10}" for c in columns))
    for row in rows:
        print("  ".join(f"{_show(row.get(c, '')):>10}" for c in columns))
    with open(out / "trials.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        writer.writerows(rows)
    complete = [t for t in study.get_trials(deepcopy=False) if t.state.name == "COMPLETE"]
    if not complete:
        print(f"no trial completed: no best config (the trials' logs: {out}/trial-*/train.log)")
        return False
    best = study.best_trial
    folder = f"trial-{best.user_attrs.get('continues', best.number):04d}"
    best_config = with_values(config, {**best.params, "train.out_dir": str(out / "best")})
    header = (
        f"# The best trial of sweep {study.study_name!r}: trial {best.number} ({folder}), "
        f"{task.monitor} {best.value}.\n# Train it: python -m {__package__} train --config "
        f"{out / 'best.toml'}\n"
    )
    (out / "best.toml").write_text(header + to_toml(best_config), encoding="utf-8")
    print(f"best: trial {best.number}, {task.monitor} {best.value}; wrote {out / 'best.toml'}")
    return True


def trial_row(trial: Any, metric: str) -> dict[str, Any]:
    attrs = trial.user_attrs
    notes = [f"continues trial {attrs['continues']}" if "continues" in attrs else ""]
    notes += [f"{attrs['interrupted']}, continued later" if "interrupted" in attrs else ""]
    notes += [attrs.get("error", "")]
    value = "" if trial.value is None or math.isnan(trial.value) else trial.value
    return {
        "trial": trial.number,
        "state": trial.state.name,
        metric: value,
        **trial.params,
        "note": "; ".join(n for n in notes if n),
    }


def _show(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
