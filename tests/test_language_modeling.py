"""Issue 32 (part 3): the language-modeling task, proven on generated projects.

A language-modeling project renders black-, ruff- and lint-clean with both of its dataset
kinds and all features; a project of another task holds nothing of it. One project (gpt,
text-corpus added) passes its own tests, smoke-trains, resumes bit-identically after a
SIGKILL, and `generate` gives the same text for the same seed from the checkpoint alone
(its BPE tokeniser included, the training text deleted). `export` writes pt2 and ONNX
programs of any batch and length up to block_size that give the model's logits in a fresh
interpreter, and a sidecar that describes tokens in, logits out and the tokeniser.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import SLOW_DATASET, features_for, generate, kill_tree_once, run_in_project
from test_option_space import check_clean
from typer.testing import CliRunner

from ptgen.cli import app
from ptgen.components import add_component

PKG = "lm_proj"
TRACES = ("max-new-tokens", "LanguageModeling", "perplexity", "_tokens", "block_size", "tokenizers")


def test_ptgen_list_shows_the_task_and_its_kinds() -> None:
    result = CliRunner().invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    assert "language-modeling" in result.output and "causal LM" in result.output
    assert "gpt" in result.output and "text-corpus" in result.output


def test_renders_clean_with_every_feature_and_both_dataset_kinds(tmp_path: Path) -> None:
    features = features_for("language-modeling")
    project = generate(tmp_path, "lm-all", task="language-modeling", features=features)
    add_component(project, "dataset", "corpus", "text-corpus")
    check_clean([project], tmp_path)
    cli = (project / "src/lm_all/cli.py").read_text(encoding="utf-8")
    assert 'add("generate"' in cli
    assert "bpe = [" in (project / "pyproject.toml").read_text(encoding="utf-8")


@pytest.mark.parametrize("task", ["tabular-regression"])
def test_another_task_holds_no_trace_of_it(tmp_path: Path, task: str) -> None:
    project = generate(tmp_path, "other", task=task, features=features_for(task))
    src = project / "src/other"
    assert not (src / "generate.py").exists() and not (src / "data/_tokens.py").exists()
    assert not (project / "tests/test_generate.py").exists()
    text = "\n".join(p.read_text(encoding="utf-8") for p in src.rglob("*.py"))
    text += (project / "README.md").read_text(encoding="utf-8")
    assert [trace for trace in TRACES if trace in text] == []


def test_bad_data_roots_are_one_line_errors(tmp_path: Path) -> None:
    project = generate(tmp_path, "lm-proj", task="language-modeling")
    add_component(project, "dataset", "corpus", "text-corpus")
    (tmp_path / "tiny.txt").write_text("too short", encoding="utf-8")
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9 " * 400)
    for root, needle in [
        (tmp_path / "missing.txt", "does not exist"),
        (tmp_path / "tiny.txt", "too few for one block"),
        (tmp_path / "latin1.txt", "not UTF-8"),
        (project / "src", "no train.txt and no *.txt file"),
    ]:
        sets = ["--set", "data.name=corpus", "--set", f"data.root={root}"]
        result = run_in_project(project, "-m", PKG, "train", *sets)
        assert result.returncode == 1, result.stderr
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
        assert needle in result.stderr, result.stderr


def corpus(path: Path) -> Path:
    """Some English-like text: a few sentences over and over, with numbers."""
    lines = [
        f"The {word} number {i} jumps over the lazy dog, and the quick fox runs home."
        for i, word in zip(range(300), ["first", "next", "other", "last"] * 75, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = generate(
        tmp_path_factory.mktemp("lm"), "lm-proj", task="language-modeling", features=("export",)
    )
    add_component(path, "dataset", "corpus", "text-corpus")
    (path / "src" / PKG / "data" / "slowsynthetic.py").write_text(SLOW_DATASET)
    return path


CACHE = f"""
import json, sys
from pathlib import Path
import torch
from {PKG}.config import load_config
from {PKG}.data import build_data
from {PKG}.data._tokens import ByteTokenizer
text, cache = Path(sys.argv[1]), Path(sys.argv[1]).parent / ".cache"
def config(*sets):
    base = ["data.name=corpus", f"data.root={{text}}", "data.block_size=16", *sets]
    return load_config(overrides=list(base)).data
def entries():
    return {{path.name: path.stat().st_mtime_ns for path in sorted(cache.iterdir())}}
said = {{}}
for name, sets in [("byte", []), ("bpe", ["data.tokenizer=bpe", "data.vocab_size=300"])]:
    print(f"-- {{name}} first", file=sys.stderr, flush=True)
    first = build_data(config(*sets), 0)
    written = entries()
    print(f"-- {{name}} again", file=sys.stderr, flush=True)
    again = build_data(config(*sets), 0)  # a second run
    resumed = build_data(config(*sets), 0, state=first.state)  # resume and evaluate
    same = all(
        torch.equal(first.train[i]["inputs"], b.train[i]["inputs"])
        for b in (again, resumed) for i in range(len(first.train))
    )
    said[name] = [written, entries(), same, again.state == first.state]
print("-- changed", file=sys.stderr, flush=True)
text.write_text(text.read_text(encoding="utf-8").replace("fox", "cat"), encoding="utf-8")
changed = build_data(config(), 0)
expected = ByteTokenizer().encode(text.read_text(encoding="utf-8"))[:16].long()
said["changed"] = [entries(), torch.equal(changed.train[0]["inputs"], expected)]
print("-- unwritable", file=sys.stderr, flush=True)
(text.parent / "taken").write_text("a file, not a folder")
unwritable = build_data(config(f"data.cache_dir={{text.parent / 'taken'}}"), 0)
said["unwritable"] = len(unwritable.train)
print(json.dumps(said))
"""


def test_text_corpus_tokens_are_cached_reused_and_invalidated(
    project: Path, tmp_path: Path
) -> None:
    (tmp_path / "data").mkdir()
    text = corpus(tmp_path / "data" / "corpus.txt")
    result = run_in_project(project, "-c", CACHE, str(text))
    assert result.returncode == 0, result.stderr
    said = json.loads(result.stdout.splitlines()[-1])
    stages = dict(part.split("\n", 1) for part in result.stderr.split("-- ")[1:])
    for kind in ("byte", "bpe"):  # tokenised and cached once; a second run, a resumed one reuse
        assert "reusing" not in stages[f"{kind} first"]
        assert "training tokens cached in" in stages[f"{kind} first"]
        written, reread, same, same_state = said[kind]
        assert written == reread and same and same_state  # no entry written again
        assert "reusing the training tokens cached in" in stages[f"{kind} again"]
        assert "reusing the validation tokens cached in" in stages[f"{kind} again"]
        lines = stages[f"{kind} again"].splitlines()
        assert lines and all(line.startswith("data: reusing the ") for line in lines)
    assert "reusing the BPE tokeniser cached in" in stages["bpe again"]
    bpe_entries = set(said["bpe"][0])  # byte's two splits, then BPE's tokeniser and splits
    assert len(bpe_entries) == 5 and set(said["byte"][0]) < bpe_entries
    entries, right = said["changed"]  # the file changed: tokenised again, stale entries gone
    assert right and "training tokens cached in" in stages["changed"]
    assert "reusing" not in stages["changed"]
    (tokeniser,) = [name for name in bpe_entries if name.endswith(".json")]
    assert set(entries) & bpe_entries == {tokeniser} and len(entries) == 3
    assert said["unwritable"] > 0 and "no token cache" in stages["unwritable"]


@pytest.mark.slow
def test_project_tests_pass_and_it_smoke_trains(project: Path) -> None:
    tests = run_in_project(project, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    smoke = run_in_project(project, "-m", PKG, "smoke", "--steps", "3", "--set", "model.width=32")
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert smoke.stdout.count("PASS") == 4 and "perplexity" in smoke.stdout


STEPS = 12  # 8 steps per epoch: across an epoch boundary, stopping mid-epoch
RESUME = [
    "data.name=slowsynthetic", "data.num_samples=64", "data.block_size=16",
    "model.width=16", "model.depth=1", "model.num_heads=2",
    "train.batch_size=8", "train.epochs=2", "train.device=cpu",
    "train.checkpoint_every=3", "train.log_every=4", f"train.max_steps={STEPS}",
]  # fmt: skip


def sets(*settings: str) -> list[str]:
    return [arg for setting in settings for arg in ("--set", setting)]


def weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=True)["model_state_dict"]


@pytest.mark.slow
def test_sigkill_then_resume_auto_is_bit_identical(project: Path, tmp_path: Path) -> None:
    reference = run_in_project(
        project, "-m", PKG, "train", *sets(*RESUME, f"train.out_dir={tmp_path / 'ref'}")
    )
    assert reference.returncode == 0, reference.stderr
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", PKG, "train", *sets(*RESUME, f"train.out_dir={out}")],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    kill_tree_once(proc, out / "step-00000006.pt")
    killed_at = torch.load(out / "last.pt", weights_only=True)["step"]
    assert 6 <= killed_at < STEPS
    args = sets(*RESUME, f"train.out_dir={out}", "train.resume=auto")
    resumed = run_in_project(project, "-m", PKG, "train", *args)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from {out / 'last.pt'}" in resumed.stdout
    got, want = weights(out / "last.pt"), weights(tmp_path / "ref" / "last.pt")
    assert got.keys() == want.keys()
    assert [name for name in want if not torch.equal(got[name], want[name])] == []


@pytest.mark.slow
def test_generate_from_the_checkpoint_alone_is_deterministic_per_seed(
    project: Path, tmp_path: Path
) -> None:
    data = tmp_path / "corpus"
    data.mkdir()
    text = corpus(data / "train.txt")
    (data / "test.txt").write_text(text.read_text(encoding="utf-8")[:3000], encoding="utf-8")
    settings = [
        "data.name=corpus", f"data.root={data}", "data.tokenizer=bpe", "data.vocab_size=300",
        "data.block_size=32", "model.width=32", "model.depth=1", "train.max_steps=20",
        "train.device=cpu", f"train.out_dir={tmp_path / 'run'}",
    ]  # fmt: skip
    trained = run_in_project(project, "-m", PKG, "train", *sets(*settings))
    assert trained.returncode == 0, trained.stderr
    checkpoint = tmp_path / "run" / "best.pt"
    assert "bpe" in torch.load(checkpoint, weights_only=True)["data_state"]
    evaluated = run_in_project(
        project, "-m", PKG, "evaluate", "--checkpoint", str(checkpoint), "--split", "test", "--json"
    )
    assert evaluated.returncode == 0, evaluated.stderr
    metrics = json.loads(evaluated.stdout.splitlines()[-1])
    assert metrics["num_samples"] > 0
    assert metrics["perplexity"] == pytest.approx(math.exp(metrics["nats_per_token"]), rel=1e-4)
    args = ["predict", "--checkpoint", str(checkpoint), str(data / "test.txt")]
    predicted = run_in_project(project, "-m", PKG, *args)  # no per-input prediction
    assert predicted.returncode == 2 and "'generate'" in predicted.stderr  # argparse's choices
    shutil.rmtree(data)  # generate and export need the checkpoint only
    script = f"""
import contextlib, io, json, sys
from {PKG}.cli import main
said = []
for seed in ("1", "1", "2"):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["generate", "--checkpoint", sys.argv[1], "The quick", "--seed", seed,
                     "--max-new-tokens", "30", "--top-k", "20", "--temperature", "0.8"])
    said.append([code, out.getvalue()])
print(json.dumps(said))
"""
    result = run_in_project(project, "-c", script, str(checkpoint))
    assert result.returncode == 0, result.stderr
    (c1, first), (c2, again), (c3, other) = json.loads(result.stdout.splitlines()[-1])
    assert c1 == c2 == c3 == 0
    assert first.startswith("The quick") and len(first) > len("The quick") + 5
    assert again == first and other != first
    exported = run_in_project(
        project, "-m", PKG, "export", "--checkpoint", str(checkpoint), "--format", "pt2"
    )
    assert exported.returncode == 0, exported.stderr
    sidecar = json.loads((tmp_path / "run" / "best.pt2.json").read_text(encoding="utf-8"))
    tokenizer = sidecar["tokenizer"]
    assert tokenizer["kind"] == "bpe" and tokenizer["vocab_size"] == sidecar["vocab_size"]
    assert sidecar["output"]["shape"] == ["batch", "length", sidecar["vocab_size"]]
    tokenizers = pytest.importorskip("tokenizers")  # the sidecar alone encodes and decodes
    ids = tokenizers.Tokenizer.from_str(tokenizer["json"]).encode("The quick fox").ids
    assert 0 < len(ids) < len("The quick fox") and max(ids) < sidecar["vocab_size"]
    assert tokenizers.Tokenizer.from_str(tokenizer["json"]).decode(ids) == "The quick fox"


def onnx_available() -> bool:
    return all(importlib.util.find_spec(name) for name in ("onnxruntime", "onnxscript"))


FRESH = f"""
import json, sys
import torch
from {PKG}.evaluate import load_inference
checkpoint, *files = sys.argv[1:]
model = load_inference(checkpoint, None, ["train.device=cpu"]).model  # eval mode, float32
gen = torch.Generator().manual_seed(1)
batches = [torch.randint(0, 256, shape, generator=gen) for shape in [(3, 5), (2, 16), (1, 1)]]
with torch.no_grad():
    expected = [model(x) for x in batches]
said = {{}}
for path in files:
    if path.endswith(".pt2"):
        program = torch.export.load(path).module()
        run = lambda x: program(x)  # positional, as the sidecar says
        try:
            program(torch.zeros(1, 17, dtype=torch.long))
            said["too_long"] = "ran"
        except Exception as exc:
            said["too_long"] = str(exc)
    else:
        import onnxruntime
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        run = lambda x: torch.from_numpy(session.run(None, {{"inputs": x.numpy()}})[0])
    outputs = [run(x) for x in batches]
    said[path] = [[list(y.shape), float((y - e).abs().max())] for y, e in zip(outputs, expected)]
print(json.dumps(said))
"""


@pytest.mark.slow
def test_export_takes_any_batch_and_length_up_to_block_size(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    settings = [
        "data.block_size=16", "model.width=16", "model.depth=1", "model.num_heads=2",
        "train.max_steps=1", "train.device=cpu", f"train.out_dir={out}",
    ]  # fmt: skip
    trained = run_in_project(project, "-m", PKG, "train", *sets(*settings))
    assert trained.returncode == 0, trained.stderr
    formats = ["pt2", "onnx"] if onnx_available() else ["pt2"]
    for fmt in formats:
        args = ["export", "--checkpoint", str(out / "last.pt"), "--format", fmt]
        exported = run_in_project(project, "-m", PKG, *args)
        assert exported.returncode == 0, exported.stderr
        sidecar = json.loads((out / f"last.{fmt}.json").read_text(encoding="utf-8"))
        assert sidecar["inputs"] == {"inputs": {"dtype": "int64", "shape": ["batch", "length"]}}
        assert sidecar["output"]["shape"] == ["batch", "length", 256]
        assert sidecar["block_size"] == 16 and sidecar["check"]["lengths"] == [16, 1, 7]
        assert sidecar["tokenizer"]["kind"] == "byte" and "target" not in sidecar
    files = [str(out / f"last.{fmt}") for fmt in formats]
    result = run_in_project(project, "-c", FRESH, str(out / "last.pt"), *files)
    assert result.returncode == 0, result.stderr
    said = json.loads(result.stdout.splitlines()[-1])
    for path in files:  # every batch size and length, the same logits as the model
        assert [shape for shape, _ in said[path]] == [[3, 5, 256], [2, 16, 256], [1, 1, 256]]
        assert max(difference for _, difference in said[path]) <= 1e-4, said[path]
    assert "<= 16" in said["too_long"], said["too_long"]  # longer than block_size: refused
