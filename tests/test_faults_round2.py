"""Issue 36, round two of the fault probe: predict reads inputs by the rules of training,
resume with changed settings decides per key, a stop signal during evaluation is honoured
at once. Real generated projects, really trained; one project per kind (module fixtures).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import generate, run_in_project

TEXT_PKG = "wordy"


def write_reviews(path: Path, rows: int) -> list[tuple[str, str]]:
    """label,review rows (the label first, the text not called "text")."""
    words = {"pos": "great lovely fine good", "neg": "awful bad poor terrible"}
    pairs = []
    for i in range(rows):
        label = "pos" if i % 2 else "neg"
        pairs.append((label, f"this film was {words[label].split()[i % 4]} #{i}"))
    path.write_text("label,review\n" + "".join(f"{y},{x}\n" for y, x in pairs), encoding="utf-8")
    return pairs


@pytest.fixture(scope="module")
def text_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A text project trained (a few steps) on label,review CSV rows with data.target=label:
    (project, its checkpoint, a folder for inputs)."""
    where = tmp_path_factory.mktemp("text")
    project = generate(where, TEXT_PKG, task="sequence-classification", model="gru", dataset="text")
    data = where / "reviews.csv"
    write_reviews(data, 64)
    result = run_in_project(
        project,
        "-m",
        TEXT_PKG,
        "train",
        *("--set", f"data.root={data}", "--set", "data.target=label"),
        *("--set", "train.max_steps=4", "--set", "train.batch_size=8"),
    )
    assert result.returncode == 0, result.stderr
    return project, project / "runs" / "default" / "last.pt", where


def predict(project: Path, checkpoint: Path, *inputs: Path) -> list[dict]:
    result = run_in_project(
        project, "-m", TEXT_PKG, "predict", "--checkpoint", str(checkpoint), *map(str, inputs)
    )
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.slow
def test_text_predict_reads_the_columns_and_lines_training_reads(text_run) -> None:
    project, checkpoint, where = text_run
    pairs = write_reviews(where / "new.csv", 6)
    (where / "new.csv").write_text((where / "new.csv").read_text() + "\n\n")  # blank lines
    texts = [text for _, text in pairs]
    (where / "new.txt").write_text("\n".join(texts) + "\n\n", encoding="utf-8")
    lines = "".join(json.dumps({"label": y, "review": x}) + "\n" for y, x in pairs)
    (where / "new.jsonl").write_text(lines + "\n", encoding="utf-8")
    # the same texts without labels, the one column under its training name, with a BOM
    (where / "bare.csv").write_text("\ufeffreview\n" + "\n".join(texts) + "\n", encoding="utf-8")
    inputs = [where / name for name in ("new.txt", "new.csv", "new.jsonl", "bare.csv")]
    records = predict(project, checkpoint, *inputs)
    by_file = {path: [r for r in records if r["input"] == str(path)] for path in inputs}
    assert [len(found) for found in by_file.values()] == [6, 6, 6, 6]
    expected = [(r["row"], r["top_k"]) for r in by_file[inputs[0]]]  # the texts alone
    for path in inputs[1:]:  # the review column, not the labels, of every file
        assert [(r["row"], r["top_k"]) for r in by_file[path]] == expected, path
