"""Issue 21 item 4: the `text` kind tokenises streaming into cached arrays.

Checked inside one generated project with two text datasets (variable and fixed
length): the arrays give exactly the samples of the per-row encoding (vocabulary from
the training rows, `encode` per text); the cache is reused by a second build and
replaced when the file changes; without a writable cache folder the data is tokenised
in memory. The scale itself is measured by bench/bench_text_scale.py.
"""

from __future__ import annotations

from pathlib import Path

from helpers import generate, run_in_project

from ptgen.components import add_component

PKG = "textscale"

CHECKS = r"""
import pickle
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from textscale.data import build_data
from textscale.data._text_files import build_vocab, encode, load_splits, tokenize
from textscale.data.fixed import Options as FixedOptions
from textscale.data.texts import Options

WORDS = ["Good", "bad", "film", "plot", ",", "!", "très", "so", "dull", "fine"]


def corpus(path: Path, rows: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    lines = ["text\tlabel"]
    for i in range(rows):
        text = " ".join(rng.choice(WORDS, int(rng.integers(0, 12))).tolist())
        lines.append(f"{text} w{i % 37}\t{'abc'[i % 3]}")
    lines.append("\tb")  # an empty text: one unknown token
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def per_row(root: str, max_length: int, vocab_size: int) -> tuple[list, list, list]:
    # The encoding before the arrays: every text of the rows, one tensor each.
    train, val = load_splits(root, "", 0.2)
    counts = Counter(token for text, _ in train for token in tokenize(text))
    vocab = build_vocab(counts, vocab_size)
    index = {token: i for i, token in enumerate(vocab)}
    classes = sorted({label for _, label in train})
    encoded = [
        [(encode(text, index, max_length), classes.index(label)) for text, label in rows]
        for rows in (train, val)
    ]
    return vocab, *encoded


@pytest.mark.parametrize("layout", ["one file", "train and val files"])
def test_the_arrays_give_the_per_row_samples(tmp_path: Path, layout: str) -> None:
    if layout == "one file":
        root = str(corpus(tmp_path / "all.tsv", 300))
    else:
        corpus(tmp_path / "train.tsv", 240)
        corpus(tmp_path / "val.tsv", 60, seed=1)
        root = str(tmp_path)
    vocab, train, val = per_row(root, 8, 30)
    variable = build_data(Options(name="texts", root=root, max_length=8, vocab_size=30), 0)
    fixed = build_data(FixedOptions(name="fixed", root=root, max_length=8, vocab_size=30), 0)
    assert variable.state["vocab"] == fixed.state["vocab"] == vocab
    for bundle_split, expected in ((variable.train, train), (variable.val, val)):
        assert len(bundle_split) == len(expected)
        for i, (inputs, target) in enumerate(expected):
            item = bundle_split[i]
            assert torch.equal(item["inputs"], inputs) and int(item["targets"]) == target
    for i, (inputs, target) in enumerate(train):
        item = fixed.train[i]  # padded to max_length in the dataset
        assert torch.equal(item["inputs"][: len(inputs)], inputs)
        assert int(item["lengths"]) == len(inputs)
        assert not item["inputs"][len(inputs):].any() and int(item["targets"]) == target
    assert torch.equal(variable.train_targets(), torch.tensor([t for _, t in train]))


def test_bucketing_reads_lengths_from_the_offsets(tmp_path: Path) -> None:
    root = str(corpus(tmp_path / "all.tsv", 100))
    cfg = Options(name="texts", root=root, max_length=8, bucket_by_length=True)
    bundle = build_data(cfg, 0)
    lengths = bundle.batch_sampler.keywords["lengths"]
    assert lengths == [len(bundle.train[i]["inputs"]) for i in range(len(bundle.train))]


def test_the_cache_is_reused_and_replaced_when_the_file_changes(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    data = corpus(tmp_path / "all.tsv", 200)
    cfg = Options(name="texts", root=str(data), max_length=8, vocab_size=50)
    first = build_data(cfg, 0)
    assert "tokenised text cached in" in capfd.readouterr().err
    (entry,) = (tmp_path / ".cache").iterdir()
    tokens = entry / "train.tokens.npy"
    inode, mtime = tokens.stat().st_ino, tokens.stat().st_mtime_ns
    again = build_data(cfg, 0)
    assert f"reusing the tokenised text cached in {entry}" in capfd.readouterr().err
    assert (tokens.stat().st_ino, tokens.stat().st_mtime_ns) == (inode, mtime)
    assert isinstance(again.train.arrays.tokens, np.memmap)  # mapped, not read
    assert all(torch.equal(first.train[i]["inputs"], again.train[i]["inputs"]) for i in range(9))

    data.write_text(data.read_text().replace("film", "zebra"), encoding="utf-8")
    changed = build_data(cfg, 0)
    assert "tokenised text cached in" in capfd.readouterr().err
    assert "zebra" in changed.state["vocab"] and "film" not in changed.state["vocab"]
    zebra = changed.state["vocab"].index("zebra")
    assert any(zebra in changed.train[i]["inputs"].tolist() for i in range(len(changed.train)))
    assert [p.name for p in (tmp_path / ".cache").iterdir()] != [entry.name]  # old one gone
    assert len(list((tmp_path / ".cache").iterdir())) == 1

    cfg.max_length = 4  # an option that changes the tokens: tokenised again
    assert max(len(build_data(cfg, 0).train[i]["inputs"]) for i in range(50)) == 4
    assert "tokenised text cached in" in capfd.readouterr().err


def test_a_checkpoint_state_reuses_the_cache_and_workers_map_the_files(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cfg = Options(name="texts", root=str(corpus(tmp_path / "all.tsv", 60)))
    bundle = build_data(cfg, 0)
    capfd.readouterr()
    build_data(cfg, 0, state=bundle.state)  # evaluate and resume pass the checkpoint's state
    assert "reusing" in capfd.readouterr().err
    copy = pickle.loads(pickle.dumps(bundle.train))  # what a spawned worker receives
    assert isinstance(copy.arrays.tokens, np.memmap)
    assert torch.equal(copy[5]["inputs"], bundle.train[5]["inputs"])


def test_without_a_writable_cache_folder_it_tokenises_in_memory(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "taken").write_text("a file, not a folder")
    root = str(corpus(tmp_path / "all.tsv", 60))
    bundle = build_data(Options(name="texts", root=root, cache_dir=str(tmp_path / "taken")), 0)
    assert "no token cache" in capfd.readouterr().err and len(bundle.train) == 49
    assert not isinstance(bundle.train.arrays.tokens, np.memmap)
"""


def test_text_kind_arrays_and_cache(tmp_path: Path) -> None:
    # imbalance: DataBundle.train_targets, which the checks read
    project = generate(tmp_path, name=PKG, task="sequence-classification", features=("imbalance",))
    add_component(project, "dataset", "texts", "text")
    add_component(project, "dataset", "fixed", "text", variable_length=False)
    checks = project / "tests" / "test_text_scale_checks.py"
    checks.write_text(CHECKS.lstrip(), encoding="utf-8")
    result = run_in_project(project, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(checks))
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
