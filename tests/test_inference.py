"""Using a trained model, in a real project of each task trained on real files: `evaluate
--split test`, `predict` (agreeing with evaluate, streaming, naming bad inputs) and
`export` to pt2 and ONNX, whose files a fresh interpreter without the project (only torch,
or only onnxruntime and numpy) runs to the same outputs as `predict`.

One project per task, trained once (module fixture); run with `-n 2`.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import run_in_project
from test_component_kinds import write_images, write_table, write_text

from ptgen.project import ProjectOptions, new_project

PKG = "infer"
CASES = {  # task: (dataset kind, model kind), one model kind per task
    "image-classification": ("image-folder", "cnn"),
    "sequence-classification": ("text", "transformer"),
    "tabular-regression": ("csv", "mlp"),
}
# Not here, each in its own module (one more trained project apiece would repeat it):
# multilabel-classification (test_multilabel.py: predict agrees with evaluate --split test),
# segmentation (test_segmentation.py: predict writes evaluate's masks; export of any image
# size) and language-modeling (no predict, `generate` instead; test_language_modeling.py:
# evaluate --split test, predict's refusal, export's logits in a fresh interpreter).


@dataclass
class Trained:
    task: str
    project: Path
    root: Path  # data.root: train, val and test splits
    checkpoint: Path
    predicted: list[dict]  # predict's records for the test split (`test_inputs`)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_in_project(self.project, "-m", PKG, *args)

    def test_inputs(self) -> list[str]:
        """What predict reads for the test split: a folder, a text file, a CSV file."""
        if self.task == "image-classification":
            return [str(self.root / "test")]
        if self.task == "sequence-classification":
            return [str(self.root / "test.txt")]
        return [str(self.root / "test.csv")]


def write_splits(task: str, root: Path) -> Path:
    """train/val/test files of the task's file kind (the helpers of test_component_kinds)."""
    if task == "image-classification":
        write_images(root)
        write_images(root.parent / "more")
        shutil.move(root.parent / "more" / "val", root / "test")
        return root
    root.mkdir()
    if task == "sequence-classification":
        for split, rows in (("train", 150), ("val", 30), ("test", 30)):
            write_text(root / f"{split}.tsv", rows)
        texts = [row["text"] for row in read_rows(root / "test.tsv", "\t")]
        (root / "test.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
        return root
    for split, rows in (("train", 150), ("val", 30), ("test", 30)):
        write_table(root / f"{split}.csv", rows)
    return root


def read_rows(path: Path, delimiter: str = ",") -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter=delimiter))


@pytest.fixture(scope="module", params=list(CASES))
def trained(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Trained:
    task = request.param
    dataset, model = CASES[task]
    where = tmp_path_factory.mktemp(task)
    options = ProjectOptions(PKG, task, model, dataset, features=("export", "plot"))  # CSVs
    project = new_project(options, where, run_smoke=False, init_git=False).path
    root = write_splits(task, where / "data")
    result = run_in_project(
        project, "-m", PKG, "train", "--set", f"data.root={root}", "--set", "train.epochs=2"
    )
    assert result.returncode == 0, result.stderr
    trained = Trained(task, project, root, project / "runs" / "default" / "best.pt", [])
    result = trained.run("predict", "--checkpoint", str(trained.checkpoint), *trained.test_inputs())
    assert result.returncode == 0, result.stderr
    trained.predicted = [json.loads(line) for line in result.stdout.splitlines()]
    return trained


def truth(trained: Trained, records: list[dict]) -> list:
    """The true label (or value) of each predicted test input."""
    if trained.task == "image-classification":
        return [Path(record["input"]).parent.name for record in records]
    if trained.task == "sequence-classification":
        return [row["label"] for row in read_rows(trained.root / "test.tsv", "\t")]
    return [float(row["y"]) for row in read_rows(trained.root / "test.csv")]


@pytest.mark.slow
def test_predict_agrees_with_evaluate_on_the_test_split(trained: Trained) -> None:
    result = trained.run(
        "evaluate", "--checkpoint", str(trained.checkpoint), "--split", "test", "--json"
    )
    assert result.returncode == 0, result.stderr
    metrics = json.loads(result.stdout.splitlines()[-1])
    records = trained.predicted
    expected = truth(trained, records)
    assert len(records) == len(expected) == metrics["num_samples"]
    if trained.task == "tabular-regression":  # values in the target's own units
        errors = [abs(r["value"] - y) for r, y in zip(records, expected, strict=True)]
        assert sum(errors) / len(errors) == pytest.approx(metrics["mae"], rel=1e-4)
        assert {"rmse", "r2"} <= metrics.keys()
        return
    hits = [r["label"] == y for r, y in zip(records, expected, strict=True)]
    assert sum(hits) / len(hits) == pytest.approx(metrics["accuracy"])
    names = set(metrics["per_class"])
    assert all(r["label"] in names and r["top_k"][0]["label"] == r["label"] for r in records)
    confusion = read_rows(Path(metrics["confusion_matrix_csv"]))
    assert [row["true \\ predicted"] for row in confusion] == sorted(names)
    assert sum(int(row[name]) for row in confusion for name in names) == len(records)


@pytest.mark.slow
def test_bad_inputs_are_named_and_the_others_predicted(trained: Trained, tmp_path: Path) -> None:
    if trained.task == "image-classification":
        good = sorted((trained.root / "test" / "cat").glob("*.png"))[:2]
        bad = tmp_path / "broken.png"
        bad.write_bytes(b"not a png")
        inputs, named = [str(good[0]), str(bad), str(good[1])], str(bad)
    elif trained.task == "sequence-classification":
        bad = tmp_path / "texts.jsonl"
        bad.write_text('{"text": "a great film"}\n{"title": "no text"}\n{"text": "awful"}\n')
        inputs, named = [str(bad)], f"{bad} row 2"
    else:
        bad = tmp_path / "rows.csv"
        bad.write_text("c,colour,b,a\n0.5,red,3,1\n0.5,blue,oops,1\n0.1,red,2,2\n")  # any order
        inputs, named = [str(bad)], f"{bad} row 2: column 'b' is not a number"
    out = tmp_path / "out.csv"
    result = trained.run(
        "predict",
        "--checkpoint",
        str(trained.checkpoint),
        *inputs,
        "--format",
        "csv",
        "--output",
        str(out),
    )
    assert result.returncode == 1
    assert named in result.stderr and len(result.stderr.strip().splitlines()) == 1
    rows = read_rows(out)
    if trained.task == "image-classification":
        assert [r["input"] for r in rows] == [str(good[0]), str(good[1])]
    else:
        assert [r["row"] for r in rows] == ["1", "3"]  # rows of the input file
    assert ("value" if trained.task == "tabular-regression" else "label") in rows[0]


CONSUMER = r"""
import csv, importlib.util, json, re, sys
import numpy as np

sidecar, model_file, inputs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
assert importlib.util.find_spec("infer") is None, "the project must not be importable here"
info = json.load(open(sidecar))
steps = info["preprocessing"]


def images(paths):
    from PIL import Image

    mean = np.array(steps["normalize"]["mean"], np.float32)[:, None, None]
    std = np.array(steps["normalize"]["std"], np.float32)[:, None, None]
    batch = []
    for path in paths:
        with Image.open(path) as image:
            rgb = image.convert("RGB").resize(tuple(steps["resize"]), Image.Resampling.BILINEAR)
        pixels = np.asarray(rgb, np.float32).transpose(2, 0, 1) / 255  # (3, H, W)
        batch.append((pixels - mean) / std)
    return {"inputs": np.stack(batch)}


def texts(path):
    index = {token: i for i, token in enumerate(steps["vocab"])}
    pattern, cut = re.compile(steps["tokenize"]["pattern"]), steps["max_length"]
    ids = []
    for line in open(path, encoding="utf-8").read().splitlines():
        tokens = pattern.findall(line.lower())[:cut]
        ids.append([index.get(t, steps["unknown_index"]) for t in tokens] or steps["empty_text"])
    lengths = np.array([len(x) for x in ids], np.int64)
    width = max(lengths) if isinstance(steps["pad"]["to"], str) else steps["pad"]["to"]
    tokens = np.zeros((len(ids), width), np.int64)
    for row, x in enumerate(ids):
        tokens[row, : len(x)] = x
    mask = np.arange(width)[None, :] >= lengths[:, None]
    return {"inputs": tokens, "lengths": lengths, "padding_mask": mask}


def rows(path):
    na, x = set(steps["na_values"]), []
    for r in csv.DictReader(open(path, newline="")):
        values = []
        for c in steps["columns"]:
            cell = r[c["name"]].strip()
            if c["kind"] == "numeric":
                values.append(((c["mean"] if cell in na else float(cell)) - c["mean"]) / c["std"])
            else:
                values += [float(cell == category) for category in c["categories"]]
            values += [float(cell in na)] if c["missing"] else []
        x.append(values)
    assert len(x[0]) == len(steps["features"])
    return {"inputs": np.array(x, np.float32)}


feed = {"image": lambda: images(inputs), "sequence": lambda: texts(inputs[0])}.get(
    sys.argv[4], lambda: rows(inputs[0])
)()
if info["format"] == "onnx":
    import onnxruntime

    session = onnxruntime.InferenceSession(model_file, providers=["CPUExecutionProvider"])
    names = [node.name for node in session.get_inputs()]
    outputs = session.run(None, {name: feed[name] for name in names})[0]
    assert "torch" not in sys.modules, "onnxruntime and numpy only"
else:
    import torch

    model = torch.export.load(model_file).module()
    named = {k: torch.from_numpy(v) for k, v in feed.items()}
    with torch.no_grad():  # by name, in the sidecar's order, and like the model: model(x)
        outputs = model(*[named[name] for name in info["inputs"]]).numpy()
        if len(named) == 1:
            assert np.array_equal(model(named["inputs"]).numpy(), outputs)
        else:
            assert np.array_equal(model(*named.values()).numpy(), outputs)
    assert list(info["inputs"]) == list(feed), (list(info["inputs"]), list(feed))
if "classes" in info:
    e = np.exp(outputs - outputs.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    best = p.argmax(axis=1)
    results = [
        {"label": info["classes"][i], "probability": float(p[n, i])} for n, i in enumerate(best)
    ]
else:
    values = outputs * np.array(info["target"]["std"]) + np.array(info["target"]["mean"])
    results = [{"value": float(v[0])} for v in values]
print(json.dumps(results))
"""


def fresh_interpreter(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -c CONSUMER ARGS` with nothing of the project on its path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["OMP_NUM_THREADS"] = "1"
    return subprocess.run(
        [sys.executable, "-c", CONSUMER, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["pt2", "onnx"])
def test_exported_model_runs_without_the_project(
    trained: Trained, fmt: str, tmp_path: Path
) -> None:
    target = tmp_path / f"model.{fmt}"
    result = trained.run(
        "export", "--checkpoint", str(trained.checkpoint), "--format", fmt, "--output", str(target)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"wrote {target} and its sidecar {target}.json"
    sidecar = json.loads(Path(f"{target}.json").read_text())
    assert sidecar["torch_version"] and sidecar["template_version"] != "unknown"
    assert sidecar["check"]["max_difference"] <= 1e-4
    predicted = trained.predicted
    if trained.task == "image-classification":  # the folder, file by file, in predict's order
        inputs = [record["input"] for record in predicted]
    else:
        inputs = trained.test_inputs()
    modality = {"image-classification": "image", "sequence-classification": "sequence"}
    consumer = fresh_interpreter(
        f"{target}.json",
        str(target),
        json.dumps(inputs),
        modality.get(trained.task, "tabular"),
        cwd=tmp_path,
    )
    assert consumer.returncode == 0, consumer.stderr[-3000:]
    reproduced = json.loads(consumer.stdout)
    assert len(reproduced) == len(predicted)
    for mine, theirs in zip(reproduced, predicted, strict=True):
        if "value" in theirs:
            assert mine["value"] == pytest.approx(theirs["value"], rel=1e-4, abs=1e-4)
        else:
            assert mine["label"] == theirs["label"]
            assert mine["probability"] == pytest.approx(theirs["probability"], abs=1e-4)


SHIFTY = '''"""A model that computes something else once exported: export's check must refuse it."""

from dataclasses import dataclass

import torch
from torch import nn

from ..config import ModelConfig
from ..tasks import DataSpec


@dataclass
class Options(ModelConfig):
    pass


class Shifty(nn.Module):
    def __init__(self, spec: DataSpec) -> None:
        super().__init__()
        self.head = nn.Linear(spec.in_channels, spec.num_outputs)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        scores = self.head(inputs.mean(dim=(2, 3)))  # (B, K)
        return scores + 0.01 if torch.compiler.is_exporting() else scores


def build(cfg: Options, spec: DataSpec) -> nn.Module:
    return Shifty(spec)
'''


@pytest.mark.slow
@pytest.mark.parametrize("trained", ["image-classification"], indirect=True)
def test_export_refuses_a_program_that_differs_and_writes_nothing(
    trained: Trained, tmp_path: Path
) -> None:
    (trained.project / "src" / PKG / "models" / "shifty.py").write_text(SHIFTY)
    out_dir = tmp_path / "run"
    result = trained.run(
        "train", "--set", "model.name=shifty", "--set", "train.max_steps=1",
        "--set", f"train.out_dir={out_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    target = tmp_path / "out" / "model.pt2"
    result = trained.run(
        "export", "--checkpoint", str(out_dir / "last.pt"), "--format", "pt2",
        "--output", str(target),
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.startswith("error: the exported model differs from the eager one by up")
    assert "0.01" in result.stderr and len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "out").exists() and sorted(os.listdir(tmp_path)) == ["run"]


@pytest.mark.slow
@pytest.mark.parametrize("trained", ["tabular-regression"], indirect=True)
def test_train_monitor_picks_best_pt(trained: Trained, tmp_path: Path) -> None:
    out_dir = tmp_path / "run"
    result = trained.run(
        "train", "--set", f"data.root={trained.root}", "--set", "train.epochs=3",
        "--set", "train.monitor=r2", "--set", f"train.out_dir={out_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    val = [row for row in read_rows(out_dir / "metrics.csv") if row["split"] == "val"]
    best = max(val, key=lambda row: float(row["r2"]))  # R^2: higher is better
    result = trained.run("evaluate", "--checkpoint", str(out_dir / "best.pt"), "--json")
    assert json.loads(result.stdout)["r2"] == pytest.approx(float(best["r2"]), rel=1e-4)
    result = trained.run("train", "--set", "train.monitor=accuracy")
    assert result.returncode == 1
    assert "train.monitor must be one of mae, rmse, r2, loss" in result.stderr
