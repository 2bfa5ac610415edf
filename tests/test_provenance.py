"""Provenance in every checkpoint and MODEL_CARD.md beside best.pt (issue 52, parts 2 and 3):
one generated project (tabular classification, csv data, the export feature) trained in its
git repository with an uncommitted change, evaluated, exported, then resumed after a new
commit and a changed data file; every test reads what that one run left."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from tests.helpers import generate, run_in_project

PKG = "provdemo"
SECRET_ENV = "PTGEN_TEST_SECRET_VALUE_4711"  # in the run's environment, never in a record


def git(project: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, check=True)
    return done.stdout


def write_tables(folder: Path) -> None:
    folder.mkdir()
    for split, rows in (("train", 96), ("val", 32), ("test", 32)):
        lines = ["x0,x1,label"] + [
            f"{i % 7 - 3},{(i * 5) % 11 - 5},{'up' if (i * 5) % 11 > 5 else 'down'}"
            for i in range(rows)
        ]
        (folder / f"{split}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def train(project: Path, *sets: str) -> subprocess.CompletedProcess[str]:
    args = [arg for setting in ("data.root=data", *sets) for arg in ("--set", setting)]
    os.environ[SECRET_ENV] = "s3cr3t-from-the-environment"
    try:
        return run_in_project(project, "-m", PKG, "train", *args)
    finally:
        del os.environ[SECRET_ENV]


def load(path: Path) -> dict[str, Any]:
    return torch.load(path, map_location="cpu", weights_only=True)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Train (2 epochs) with an uncommitted change, evaluate val and test, export; then commit
    and resume (1 more epoch), change a data file and resume (1 more)."""
    project = generate(
        tmp_path_factory.mktemp("prov"),
        name=PKG,
        task="tabular-classification",
        dataset="csv",
        features=("export",),
    )
    write_tables(project / "data")
    with open(project / "README.md", "a", encoding="utf-8") as readme:
        readme.write("\nan uncommitted change\n")
    out = project / "runs" / "default"
    first = train(project, "train.epochs=2", "train.batch_size=32")
    assert first.returncode == 0, first.stderr[-3000:]
    found: dict[str, Any] = {"project": project, "out": out, "first": first}
    found["best"], found["last"] = load(out / "best.pt"), load(out / "last.pt")
    found["head"] = git(project, "rev-parse", "HEAD").strip()
    found["diff"] = git(project, "diff", "HEAD")
    found["card_after_training"] = (out / "MODEL_CARD.md").read_text(encoding="utf-8")
    for split in ("val", "test"):
        best = str(out / "best.pt")
        done = run_in_project(
            project, "-m", PKG, "evaluate", "--checkpoint", best, "--split", split, "--json"
        )
        assert done.returncode == 0, done.stderr[-3000:]
        found[split] = json.loads(done.stdout.strip().splitlines()[-1])
    found["card"] = (out / "MODEL_CARD.md").read_text(encoding="utf-8")
    exported = run_in_project(
        project, "-m", PKG, "export", "--checkpoint", str(out / "best.pt"), "--format", "pt2"
    )
    assert exported.returncode == 0, exported.stderr[-3000:]
    found["sidecar"] = json.loads((out / "best.pt2.json").read_text(encoding="utf-8"))
    git(project, "commit", "-qam", "the change, committed")
    found["new_head"] = git(project, "rev-parse", "HEAD").strip()
    found["after_commit"] = train(
        project, "train.epochs=3", "train.batch_size=32", "train.resume=auto"
    )
    assert found["after_commit"].returncode == 0, found["after_commit"].stderr[-3000:]
    found["committed"] = load(out / "last.pt")
    with open(project / "data" / "train.csv", "a", encoding="utf-8") as table:
        table.write("1,1,up\n")
    found["after_data"] = train(
        project, "train.epochs=4", "train.batch_size=32", "train.resume=auto"
    )
    assert found["after_data"].returncode == 0, found["after_data"].stderr[-3000:]
    return found


@pytest.mark.slow
def test_every_checkpoint_holds_commit_dirty_flag_and_data_fingerprint(run: dict) -> None:
    for checkpoint in (run["best"], run["last"]):
        record = checkpoint["provenance"]
        assert record["git"]["commit"] == run["head"] and record["git"]["dirty"] is True
        assert record["data"]["root"] == "data" and record["data"]["files"] == 3
        assert len(record["data"]["sha256"]) == 64
        assert record["command"].startswith(f"python -m {PKG} train --set data.root=data")
        assert record["template_version"] not in ("", "unknown")
        assert {"torch", "numpy"} <= set(record["packages"])
        assert record["torch"] == torch.__version__ and record["started"] <= record["ended"]


@pytest.mark.slow
def test_the_diff_hash_is_the_hash_of_the_uncommitted_change(run: dict) -> None:
    expected = hashlib.sha256(run["diff"].encode()).hexdigest()
    assert run["best"]["provenance"]["git"]["diff_sha256"] == expected


@pytest.mark.slow
def test_evaluate_json_and_the_export_sidecar_carry_it(run: dict) -> None:
    record = run["best"]["provenance"]
    assert run["val"]["provenance"] == record
    assert run["test"]["provenance"] == record
    assert run["sidecar"]["provenance"] == record


@pytest.mark.slow
def test_no_environment_variable_and_no_absolute_path_in_the_record(run: dict) -> None:
    text = json.dumps(run["best"]["provenance"]) + run["card"]
    assert "s3cr3t-from-the-environment" not in text and SECRET_ENV not in text
    assert str(run["project"]) not in text


def warnings(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [
        line
        for line in done.stderr.splitlines()
        if line.startswith("warning: since the checkpoint was written")
    ]


@pytest.mark.slow
def test_resume_after_a_new_commit_warns_in_one_line(run: dict) -> None:
    assert warnings(run["first"]) == []
    said = warnings(run["after_commit"])
    assert said == [
        f"warning: since the checkpoint was written: git {run['head']} -> {run['new_head']}"
    ]
    git_now = run["committed"]["provenance"]["git"]
    assert git_now["commit"] == run["new_head"] and git_now["dirty"] is False


@pytest.mark.slow
def test_resume_after_a_changed_data_file_warns_in_one_line(run: dict) -> None:
    before = run["committed"]["provenance"]["data"]["sha256"]
    said = warnings(run["after_data"])
    assert len(said) == 1 and said[0].startswith(
        f"warning: since the checkpoint was written: data {before} -> "
    )
    assert "git" not in said[0]


@pytest.mark.slow
def test_the_model_card_is_a_hugging_face_card_naming_best_pt_metrics(run: dict) -> None:
    text = run["card"]
    assert text.startswith("---\n")
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["library_name"] == "pytorch" and "tabular-classification" in meta["tags"]
    best_scores = run["best"]["best_scores"]
    validation = {f"validation {k}" for k, v in best_scores.items() if isinstance(v, float)}
    assert {"validation accuracy", "validation loss"} <= validation <= set(meta["metrics"])
    assert f"- validation accuracy: {best_scores['accuracy']:.6g}" in text
    tests = {f"test {k}" for k, v in run["test"].items() if isinstance(v, float)}
    assert "test accuracy" in tests and tests <= set(meta["metrics"])  # evaluate --split test
    assert "test accuracy" not in run["card_after_training"]
    assert "classes: down, up" in text and "parameters" in text
    assert 'data.root="data"' in text  # a setting that differs from the defaults
    assert f"python -m {PKG} export --checkpoint runs/default/best.pt" in text
    try:
        from huggingface_hub import ModelCard
    except ImportError:  # yaml parsed it above (transformers, in the dev extra, brings it)
        return
    card = ModelCard(text)
    assert card.data.library_name == "pytorch" and card.data.metrics == meta["metrics"]
    assert "## Metrics" in card.text and "## Provenance" in card.text


@pytest.mark.slow
def test_a_secret_setting_is_redacted_and_no_git_is_said(run: dict, tmp_path: Path) -> None:
    """The project's code copied out of its git repository, run with secrets in its argv."""
    shutil.copytree(run["project"] / "src", tmp_path / "src")
    code = (
        "import json, sys\n"
        "sys.argv = ['__main__.py', 'train', '--set', 'data.api_key=hunter2', "
        "'--set=wandb.hf_token=abc', '--set', 'data.tokenizer=gpt2']\n"
        f"from {PKG} import provenance\n"
        "print(json.dumps([provenance.run_facts()['command'], provenance.git_state()]))\n"
    )
    done = run_in_project(tmp_path, "-c", code)
    assert done.returncode == 0, done.stderr[-3000:]
    command, no_git = json.loads(done.stdout.strip().splitlines()[-1])
    assert "hunter2" not in command and "abc" not in command
    assert "data.api_key=<redacted>" in command and "--set=wandb.hf_token=<redacted>" in command
    assert "data.tokenizer=gpt2" in command
    assert no_git["commit"] is None and "git" in no_git["note"]


@pytest.mark.slow
def test_a_card_that_cannot_be_written_warns_and_the_run_goes_on(run: dict, tmp_path: Path) -> None:
    """MODEL_CARD.md is a courtesy: where it cannot be written (here a folder holds its name)
    the run warns in one line and ends with best.pt and last.pt written."""
    out = tmp_path / "run"
    (out / "MODEL_CARD.md").mkdir(parents=True)
    done = train(run["project"], f"train.out_dir={out}", "train.epochs=1", "train.max_steps=2")
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line for line in done.stderr.splitlines() if "MODEL_CARD.md not written" in line]
    assert (out / "best.pt").is_file() and (out / "last.pt").is_file()
