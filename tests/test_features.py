"""Features a project chooses (`--with`, `ptgen add|remove feature`): a project without one
holds no trace of it; adding and removing go through Copier's update, keeping user edits;
plain `copier update` works in a new project; a 0.2.0 project keeps every feature it had."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import copier
import pytest
from helpers import ALL_FEATURES, PAGE, fill_disk, generate, run_in_project, tree_snapshot
from typer.testing import CliRunner

from ptgen import git
from ptgen.cli import app
from ptgen.components import ProjectInfo, plan_component
from ptgen.defaults import write_defaults
from ptgen.features import LEGACY_FEATURES, features
from ptgen.template_source import resolve_template

runner = CliRunner()
TRACES = re.compile(
    r"fsdp|optuna|mlflow|wandb|ShardStream|distributed\.checkpoint|ema_|lr.find|ModelSummary"
    r"|predict\b|\._inputs|nesterov|onecycle|plateau|head_lr|class_weights|balanced_sampler"
    r"|data_wait|Tracker|confusion_matrix_csv|uvicorn|fastapi",
    re.I,
)


def feature_files(project: Path, package: str) -> dict[str, list[Path]]:
    """The files each feature brings, as its feature.yml lists them, in `project`."""
    return {
        name: [project / f.replace("{{package_name}}", package) for f in spec.files]
        for name, spec in features().items()
    }


COMMANDS = {
    "predict": "predict",
    "sweep": "sweep",
    "experiments": "repeat",
    "export": "export",
    "fsdp": "consolidate",
    "lr-find": "lr-find",
    "serve": "serve",
}


def files_of(project: Path) -> dict[str, bytes]:
    """The project's files, without git's own."""
    return {k: v for k, v in tree_snapshot(project).items() if not k.startswith(".git/")}


def source_of(project: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (project / "src").rglob("*.py"))


def commands_of(project: Path, package: str) -> str:
    result = run_in_project(project, "-m", package, "--help", timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_default_project_holds_no_trace_of_the_features_it_did_not_choose(
    default_project: Path,
) -> None:
    package = default_project / "src" / "demo_proj"
    assert not TRACES.search(source_of(default_project))
    brought = feature_files(default_project, "demo_proj")
    assert [f for files in brought.values() for f in files if f.exists()] == []
    config = (package / "config.py").read_text(encoding="utf-8")
    absent = ("strategy:", "logger:", "profile:", "init_from:", "freeze:", "ema_", "summary_")
    absent += ("optimizer:", "momentum:", "lr_gamma:", "class_weights:", "balanced_sampler:")
    for key in absent:
        assert key not in config
    help_text = commands_of(default_project, "demo_proj")
    assert not [c for c in COMMANDS.values() if c in help_text]
    assert "features: []" in (default_project / ".copier-answers.yml").read_text()


def test_every_feature_brings_its_file_and_command(full_project: Path) -> None:
    chosen = set(ALL_FEATURES)
    brought = feature_files(full_project, "demo_proj")
    missing = [f for name in chosen - {"streams"} for f in brought[name] if not f.exists()]
    assert missing == [] and all(brought[name] for name in chosen - {"streams"})
    help_text = commands_of(full_project, "demo_proj")
    assert all(command in help_text for command in COMMANDS.values())


@pytest.mark.parametrize("feature", sorted(set(ALL_FEATURES)))
def test_each_feature_alone_renders_clean(tmp_path: Path, feature: str) -> None:
    """Black- and ruff-clean, and without a trace of the other features' files."""
    project = generate(tmp_path, "one", features=(feature,))
    subprocess.run(["black", "--check", "-q", "-l", "100", "."], cwd=project, check=True)
    subprocess.run(["ruff", "check", "-q", "."], cwd=project, check=True)
    brought = feature_files(project, "one")
    kept = {feature, *features()[feature].needs}
    unchosen = {f for n, files in brought.items() if n not in kept for f in files}
    own = [f for f in brought[feature] if not unchosen & {f, *f.parents}]  # slurm/sweep.sbatch
    assert [f for f in unchosen if f.exists()] == [] and own and all(f.exists() for f in own)


def test_add_then_remove_a_feature_keeps_the_users_edit(tmp_path: Path) -> None:
    project = generate(tmp_path, "demo")
    train = project / "src" / "demo" / "train.py"
    edit = ("# moved once, before the loop", "# moved once, before the loop (mine)")
    train.write_text(train.read_text().replace(*edit, 1))
    git.git(project, "commit", "-qam", "my edit", env=git.commit_env(project))
    before = files_of(project)

    added = runner.invoke(app, ["add", "feature", "sweep", "--project", str(project)])

    assert added.exit_code == 0, added.output
    assert "added    src/demo/sweep.py" in added.output and "[sweep]" in added.output
    assert edit[1] in train.read_text()
    assert "sweep" in commands_of(project, "demo")
    assert "features:\n- sweep" in (project / ".copier-answers.yml").read_text()
    git.git(project, "add", "-A")
    git.git(project, "commit", "-qm", "add sweep", env=git.commit_env(project))

    removed = runner.invoke(app, ["remove", "feature", "sweep", "--project", str(project)])

    assert removed.exit_code == 0, removed.output
    assert files_of(project) == before  # every trace of it gone, the edit kept


def test_adding_a_feature_to_a_dirty_project_is_refused(tmp_path: Path) -> None:
    project = generate(tmp_path, "demo")
    (project / "notes.txt").write_text("mine\n")

    result = runner.invoke(app, ["add", "feature", "export", "--project", str(project)])

    assert result.exit_code == 1 and "uncommitted changes" in result.output
    assert not (project / "src" / "demo" / "export.py").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["new", "project", "x", "--with", "sweep,nope", "--no-smoke"], "unknown feature 'nope'"),
        (["add", "feature", "nope"], "unknown feature 'nope'"),
        (["add", "feature", "streams"], "no .copier-answers.yml"),  # not in a project
    ],
)
def test_bad_feature_names_are_one_line_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and message in result.output
    assert "Traceback" not in result.output and list(tmp_path.iterdir()) == []


def test_a_shard_kind_added_later_brings_the_streaming_code(tmp_path: Path) -> None:
    project = generate(tmp_path, "seq", task="sequence-classification")
    assert not (project / "src" / "seq" / "data" / "_streams.py").exists()

    result = runner.invoke(
        app, ["add", "dataset", "shards", "--kind", "text-shards", "--project", str(project)]
    )

    assert result.exit_code == 0, result.output
    assert (project / "src" / "seq" / "data" / "_streams.py").is_file()
    assert "- streams" in (project / ".copier-answers.yml").read_text()
    loaders = (project / "src" / "seq" / "data" / "__init__.py").read_text()
    assert "BatchesItself" in loaders  # merged in: the loaders of streamed splits
    test = run_in_project(project, "-m", "pytest", "-q", "tests/test_data_shards.py")
    assert test.returncode == 0, test.stdout + test.stderr


def test_a_file_kind_brings_its_readers_and_suggests_predict(tmp_path: Path) -> None:
    """A new project with data read from files has `predict`; one on synthetic data has not,
    and gets the readers (`inputs`) with such a kind later, with the command that adds it."""
    with_files = generate(tmp_path / "a", "files", dataset="image-folder")
    assert (with_files / "src" / "files" / "predict.py").is_file()
    project = generate(tmp_path / "b", "demo")
    package = project / "src" / "demo"
    assert not (package / "predict.py").exists() and not (package / "data" / "_inputs.py").exists()

    args = ["add", "dataset", "photos", "--kind", "image-folder", "--project", str(project)]
    added = runner.invoke(app, args)

    assert added.exit_code == 0, added.output
    assert "ptgen add feature predict" in added.output
    assert (package / "data" / "_inputs.py").is_file() and not (package / "predict.py").exists()
    assert "- inputs" in (project / ".copier-answers.yml").read_text()
    git.git(project, "add", "-A")
    git.git(project, "commit", "-qm", "photos", env=git.commit_env(project))
    predict = runner.invoke(app, ["add", "feature", "predict", "--project", str(project)])
    assert predict.exit_code == 0, predict.output
    assert "predict" in commands_of(project, "demo")
    wrong = runner.invoke(app, ["add", "feature", "imbalance", "--project", str(with_files)])
    assert wrong.exit_code == 0  # image classification: served
    lm = generate(tmp_path / "c", "lm", task="language-modeling")
    refused = runner.invoke(app, ["add", "feature", "predict", "--project", str(lm)])
    assert refused.exit_code == 1 and "language-modeling" in refused.output


def test_plain_copier_update_in_a_new_project_is_up_to_date(tmp_path: Path) -> None:
    project = generate(tmp_path, "demo")
    before = files_of(project)
    command = [shutil.which("copier") or "copier", "update", "--trust", "--defaults"]

    proc = subprocess.run(command, cwd=project, capture_output=True, text=True)

    assert proc.returncode == 0, proc.stderr
    assert git.git(project, "status", "--porcelain") == "" and files_of(project) == before


@pytest.mark.slow
def test_a_0_2_0_project_updates_with_every_feature_it_had(tmp_path: Path) -> None:
    """0.2.0 answers have no `features`: the update gives the project all of 0.2.0's."""
    ref = resolve_template("0.2.0")
    project = tmp_path / "demo"
    answers = {"project_name": "demo", "task": "image-classification", "modality": "image"}
    copier.run_copy(ref.src_path, project, data=answers, vcs_ref=ref.vcs_ref, defaults=True)
    info = ProjectInfo(project, "demo", "demo", "image-classification", LEGACY_FEATURES)
    plan_component(info, "model", "cnn", "cnn").apply()
    plan_component(info, "dataset", "synthetic", "synthetic").apply()
    assert git.init_and_commit(project, "Generate demo with ptgen 0.2.0")

    result = runner.invoke(app, ["update", str(project)])

    assert result.exit_code == 0, result.output
    recorded = (project / ".copier-answers.yml").read_text()
    assert all(f"- {name}" in recorded for name in LEGACY_FEATURES)
    assert set(LEGACY_FEATURES) <= set(features())
    help_text = commands_of(project, "demo")
    assert all(command in help_text for command in ("sweep", "export", "consolidate"))
    tests = run_in_project(project, "-m", "pytest", "-q", "-x", "tests")
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]


SMALL_RUN = ["data.num_samples=64", "model.width=8", "train.batch_size=16", "train.device=cpu"]


def sets(*settings: str) -> list[str]:
    return [arg for setting in (*SMALL_RUN, *settings) for arg in ("--set", setting)]


@pytest.mark.slow
def test_a_0_4_0_project_keeps_what_0_5_0_made_features_and_its_checkpoints(
    tmp_path: Path,
) -> None:
    """0.5.0 split predict, the optimizer and schedule choices, class weights, data_wait and
    evaluate's confusion CSV off the core. A 0.4.0 project (features: none) updated with
    plain `copier update` keeps every one (keep_features.py adds their features), and its
    0.4.0 checkpoint still evaluates and resumes."""
    ref = resolve_template("0.4.0")
    project = tmp_path / "old"
    answers = {"project_name": "old", "task": "image-classification", "features": []}
    copier.run_copy(ref.src_path, project, data=answers, vcs_ref=ref.vcs_ref, defaults=True)
    info = ProjectInfo(project, "old", "old", "image-classification", ())
    plan_component(info, "model", "cnn", "cnn").apply()
    plan_component(info, "dataset", "synthetic", "synthetic").apply()
    write_defaults(project, "old")  # configs/default.toml, as ptgen writes it
    assert git.init_and_commit(project, "Generate old with ptgen 0.4.0")
    trained = run_in_project(project, "-m", "old", "train", *sets("train.max_steps=2"))
    assert trained.returncode == 0, trained.stderr
    resolve_template()  # the cache holds the newest template, as after any ptgen command

    command = [shutil.which("copier") or "copier", "update", "--trust", "--defaults"]
    proc = subprocess.run(command, cwd=project, capture_output=True, text=True)

    assert proc.returncode == 0, proc.stderr
    recorded = (project / ".copier-answers.yml").read_text()
    kept = ("imbalance", "inputs", "optim", "plot", "predict", "profiler")
    assert all(f"- {name}" in recorded for name in kept), recorded
    assert "predict" in commands_of(project, "old")
    config = (project / "src" / "old" / "config.py").read_text()
    assert all(key in config for key in ("nesterov:", "class_weights:", "balanced_sampler:"))
    checkpoint = str(project / "runs" / "default" / "last.pt")
    evaluated = run_in_project(project, "-m", "old", "evaluate", "--checkpoint", checkpoint)
    assert evaluated.returncode == 0 and "confusion" in evaluated.stdout, evaluated.stderr
    resume = sets("train.max_steps=4", "train.resume=auto", "train.scheduler=plateau")
    resumed = run_in_project(project, "-m", "old", "train", *resume)
    assert resumed.returncode == 1 and "train.scheduler" in resumed.stderr  # kept on resume
    resumed = run_in_project(
        project, "-m", "old", "train", *sets("train.max_steps=4", "train.resume=auto")
    )
    assert resumed.returncode == 0 and "resuming from" in resumed.stdout, resumed.stderr
    rows = (project / "runs" / "default" / "metrics.csv").read_text().splitlines()
    assert rows[0].endswith("data_wait") and rows[-1].startswith("4,")
    # the upgrade step of CHANGELOG.md: configs/default.toml gets the keys of 0.5.0
    assert run_in_project(project, "-m", "old", "defaults", "--write").returncode == 0
    tests = run_in_project(project, "-m", "pytest", "-q", "-x", "tests")
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]


def pairwise_rows(names: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Feature sets in which every two features appear in all four on/off combinations.
    Over N rows, each feature's column is a distinct k-subset of rows 1..N-1 (row 0 has
    no feature) with 2k > N - 1: two such subsets always share a row (both on), each has
    a row the other lacks (one on), and row 0 has neither. N is the least that fits."""
    from itertools import combinations

    def subsets(rows: int) -> list[tuple[int, ...]]:
        return list(combinations(range(1, rows), (rows - 1) // 2 + 1))

    rows = 2
    while len(subsets(rows)) < len(names):
        rows += 1
    columns = subsets(rows)[: len(names)]
    return [
        tuple(n for n, c in zip(names, columns, strict=True) if row in c) for row in range(rows)
    ]


PAIRWISE = pairwise_rows(tuple(sorted(set(ALL_FEATURES))))


def test_the_pairwise_rows_cover_every_pair() -> None:
    names = tuple(sorted(set(ALL_FEATURES)))
    rows = pairwise_rows(names)
    for a, b in ((a, b) for i, a in enumerate(names) for b in names[i + 1 :]):
        seen = {(a in row, b in row) for row in rows}
        assert seen == {(True, True), (True, False), (False, True), (False, False)}, (a, b)


@pytest.mark.slow
@pytest.mark.parametrize("row", range(len(PAIRWISE)))
def test_pairwise_feature_combinations_render_clean_and_smoke(tmp_path: Path, row: int) -> None:
    """Feature interactions, pairwise (a handful of projects instead of 2**N): each renders
    black- and ruff-clean, lists its commands, and passes its smoke run."""
    chosen = PAIRWISE[row]
    project = generate(tmp_path, "pair", features=chosen)
    subprocess.run(["black", "--check", "-q", "-l", "100", "."], cwd=project, check=True)
    subprocess.run(["ruff", "check", "-q", "."], cwd=project, check=True)
    help_text = commands_of(project, "pair")
    assert all(COMMANDS[n] in help_text for n in chosen if n in COMMANDS)
    smoke = run_in_project(project, "-m", "pair", "smoke", "--steps", "3")
    assert smoke.returncode == 0 and smoke.stdout.count("PASS") == 4, smoke.stdout + smoke.stderr


# --- issue 48: features come and go safely --------------------------------------------


def commit_all(project: Path, message: str) -> None:
    git.git(project, "add", "-A")
    git.git(project, "commit", "-qm", message, env=git.commit_env(project))


def test_removing_a_feature_keeps_its_file_that_the_user_edited(tmp_path: Path) -> None:
    """Item 5: `remove feature ema` deleted src/PKG/ema.py with the user's own code in it."""
    project = generate(tmp_path, "demo", features=("ema",))
    ema = project / "src" / "demo" / "ema.py"
    mine = ema.read_text() + "\n\ndef my_helper() -> int:\n    return 42\n"
    ema.write_text(mine)
    commit_all(project, "my helper in ema.py")

    result = runner.invoke(app, ["remove", "feature", "ema", "--project", str(project)])

    assert result.exit_code == 1, result.output
    assert "conflict src/demo/ema.py" in result.output and "kept" in result.output
    assert ema.read_text() == mine  # kept as the user left it
    assert not (project / "tests" / "test_ema.py").exists()  # the unedited file went
    assert "ema" not in (project / ".copier-answers.yml").read_text()


def test_removing_a_feature_names_the_user_configs_that_still_set_its_keys(
    tmp_path: Path,
) -> None:
    """Item 13: a user config that sets train.ema_decay would fail after the removal."""
    project = generate(tmp_path, "demo", features=("ema",))
    (project / "configs" / "fast.toml").write_text("[train]\nema_decay = 0.99\nlr = 0.01\n")
    (project / "configs" / "plain.toml").write_text("[train]\nlr = 0.01\n")
    commit_all(project, "my configs")

    result = runner.invoke(app, ["remove", "feature", "ema", "--project", str(project)])

    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "still sets" in line]
    assert lines == [
        "configs/fast.toml still sets train.ema_decay, which the project no longer reads: "
        "delete it there."
    ], result.output
    assert "ptgen add feature ema" in result.output
    assert "ema_decay" in (project / "configs" / "fast.toml").read_text()  # the user's to edit


@pytest.mark.parametrize(
    "args", [["add", "feature", "sweep"], ["add", "model", "tiny", "--kind", "mlp"]]
)
def test_an_unknown_feature_in_the_answers_is_a_one_line_error(
    tmp_path: Path, args: list[str]
) -> None:
    """Item 9: a name in `features` that no feature has was carried along silently."""
    project = generate(tmp_path, "demo")
    answers = project / ".copier-answers.yml"
    answers.write_text(answers.read_text().replace("features: []", "features:\n- sweeep"))
    commit_all(project, "a typo in the answers")
    before = files_of(project)

    result = runner.invoke(app, [*args, "--project", str(project)])

    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    (line,) = result.output.strip().splitlines()
    assert "'sweeep'" in line and "sweep" in line.replace("'sweeep'", "") and "ema" in line
    assert files_of(project) == before and git.git(project, "status", "--porcelain") == ""


def start_ptgen(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ptgen", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.005)


def test_a_second_feature_change_of_one_project_is_refused_naming_the_first(
    tmp_path: Path,
) -> None:
    """Item 8: two `add feature` at once both said they succeeded; one change was lost."""
    project = generate(tmp_path, "demo")
    first = start_ptgen("add", "feature", "sweep", "--project", str(project))
    lock = project / ".git" / "ptgen.lock"
    wait_for(lock, first)
    while lock.read_text() != str(first.pid):  # created, then locked and its PID written
        assert first.poll() is None, first.communicate()
        time.sleep(0.005)
    os.kill(first.pid, signal.SIGSTOP)  # mid-way, for as long as the second run takes
    try:
        second = runner.invoke(app, ["add", "feature", "ema", "--project", str(project)])
    finally:
        os.kill(first.pid, signal.SIGCONT)
    out, err = first.communicate(timeout=300)

    assert second.exit_code == 1 and f"PID {first.pid}" in second.output, second.output
    assert len(second.output.strip().splitlines()) == 1
    assert first.returncode == 0, out + err
    recorded = (project / ".copier-answers.yml").read_text()
    assert "- sweep" in recorded and "ema" not in recorded
    assert not (project / "src" / "demo" / "ema.py").exists()


def test_a_feature_change_killed_before_it_wrote_blocks_nothing(tmp_path: Path) -> None:
    """Item 8: a run killed while it merges (its journal written, no file yet) leaves the
    project as it was, and the next run goes ahead."""
    project = generate(tmp_path, "demo")
    before = files_of(project)
    killed = start_ptgen("add", "feature", "sweep", "--project", str(project))
    wait_for(project / ".git" / "ptgen-change.json", killed)
    killed.kill()
    killed.wait()
    assert files_of(project) == before and git.git(project, "status", "--porcelain") == ""

    result = runner.invoke(app, ["add", "feature", "sweep", "--project", str(project)])

    assert result.exit_code == 0, result.output
    assert (project / "src" / "demo" / "sweep.py").is_file()
    assert not (project / ".git" / "ptgen-change.json").exists()


@pytest.mark.slow
def test_a_feature_change_killed_while_it_writes_is_found_by_the_next_run(
    tmp_path: Path,
) -> None:
    """Item 8: killed with SIGKILL as it writes the merge into the project, re-run said
    "nothing to change" over a half-applied tree. The run is stopped in 2 ms slices from the
    moment its journal appears and killed at the first slice that changed the tree. The next
    run refuses with one line saying how to undo; after that, it applies the feature whole."""
    project = generate(tmp_path, "demo")
    killed = start_ptgen("add", "feature", "sweep", "--project", str(project))
    wait_for(project / ".git" / "ptgen-change.json", killed)
    while killed.poll() is None:
        os.kill(killed.pid, signal.SIGSTOP)
        if git.git(project, "status", "--porcelain", "--untracked-files=all"):
            break
        os.kill(killed.pid, signal.SIGCONT)
        time.sleep(0.002)
    killed.kill()
    killed.wait()
    if not git.git(project, "status", "--porcelain", "--untracked-files=all"):
        pytest.fail("the run finished or was killed before it changed the tree: no half state")

    refused = runner.invoke(app, ["add", "feature", "sweep", "--project", str(project)])

    assert refused.exit_code == 1, refused.output
    (line,) = refused.output.strip().splitlines()
    assert "interrupted" in line and "git checkout -- . && git clean -fd" in line
    subprocess.run("git checkout -- . && git clean -fdq", shell=True, cwd=project, check=True)
    result = runner.invoke(app, ["add", "feature", "sweep", "--project", str(project)])
    assert result.exit_code == 0, result.output
    assert "sweep" in commands_of(project, "demo")


def test_a_feature_change_on_a_full_disk_changes_nothing(
    small_disk: Callable[[int], Path],
) -> None:
    """Item 8: all or nothing. The disk fills while the merge is written into the project
    (a real tmpfs): one line, exit 1, and not one file of the project changed."""
    disk = small_disk(4096)
    project = generate(disk, "demo")
    before = files_of(project)
    fill_disk(disk, leave=3 * PAGE)  # the lock, the journal and one file of the merge

    result = runner.invoke(app, ["add", "feature", "sweep", "--project", str(project)])

    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert files_of(project) == before and git.git(project, "status", "--porcelain") == ""
    assert not list((project / ".git").glob("ptgen*"))
