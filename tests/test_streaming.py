"""Issue 21, item 3: the "text-shards" dataset kind streams JSONL shards (data/_streams.py).

In a generated project, on tiny shards of unequal sizes: every sample once an epoch across
2 workers and across 2 ranks x 2 workers, the same batches whatever the worker count, the
order shuffled anew each epoch and the same for the same seed, a resumed epoch exactly the
rest of the uninterrupted one, evaluation covering every validation sample once; the shard
index is reused and recounted when a shard changes. Slow: a run SIGKILLed mid-epoch and
resumed ends bit-identical to an uninterrupted one, with 2 workers and under torchrun.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import generate, kill_tree_once, run_in_project

PKG = "streams"
TRAIN_SHARDS = [23, 17, 30, 11, 15]  # 96 samples: 24 batches of 4, 12 per rank of 2
VAL_SHARDS = [9, 8]
WORDS = {"pos": ["good", "great", "fine", "nice"], "neg": ["bad", "awful", "poor", "sad"]}

# Sample ids of every batch, read back from each text's first token ("id17"), for a set
# of (world_size, workers, epoch, skip, split) cases given as JSON.
ORDERS = """
import json, sys
import torch
from streams.config import load_config
from streams.data import build_data, build_loaders
from streams.runtime import DistInfo

root, vocab, cases = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
results = []
for world, workers, epoch, skip, split, seed in cases:
    sets = [f"data.root={root}", f"data.vocab_file={vocab}", "train.batch_size=4",
            f"data.num_workers={workers}", "data.shuffle_buffer=8", f"train.seed={seed}"]
    config = load_config(None, sets)
    bundle = build_data(config.data, seed)
    ranks = []
    for rank in range(world):
        info = DistInfo(rank, world)
        train, val, stream = build_loaders(bundle, config, info, torch.device("cpu"))
        stream.set_epoch(epoch, skip * 4)
        loader = train if split == "train" else val
        batches = [[bundle.state["vocab"][i] for i in b["inputs"][:, 0].tolist()] for b in loader]
        ranks.append({"len": len(loader), "batches": batches})
    results.append(ranks)
print(json.dumps(results))
"""

SLOW_SHARDS = """
import functools
import time

from .text_shards import Options, build as build_shards


def slowly(decode, record):
    time.sleep(0.02)  # 80 ms per batch of 4: a kill lands mid-run
    return decode(record)


def build(cfg, seed, state=None):
    bundle = build_shards(cfg, seed, state)
    bundle.train.decode = functools.partial(slowly, bundle.train.decode)
    return bundle
"""


def write_shards(root: Path) -> int:
    """Shards of "idN word word ..." lines labelled pos/neg; returns the sample count."""
    rng, number = random.Random(0), 0
    for split, sizes in (("train", TRAIN_SHARDS), ("val", VAL_SHARDS)):
        (root / split).mkdir(parents=True)
        for shard, size in enumerate(sizes):
            lines = []
            for _ in range(size):
                label = rng.choice(sorted(WORDS))
                words = " ".join(rng.choice(WORDS[label]) for _ in range(4))
                lines.append(json.dumps({"text": f"id{number} {words}", "label": label}))
                number += 1
            (root / split / f"part-{shard}.jsonl").write_text("\n".join(lines) + "\n")
    return number


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("streaming")
    path = generate(where, PKG, task="sequence-classification", dataset="text-shards")
    (path / "src" / PKG / "data" / "slowshards.py").write_text(SLOW_SHARDS)
    total = write_shards(path / "shards")
    # every id a token of its own, so that each sample can be told by its first token
    (path / "vocab.txt").write_text("\n".join(f"id{n}" for n in range(total)))
    return path


def orders(project: Path, *cases: tuple[int, int, int, int, str, int]) -> list[list[dict]]:
    root, vocab = project / "shards", project / "vocab.txt"
    result = run_in_project(project, "-c", ORDERS, str(root), str(vocab), json.dumps(cases))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def ids(ranks: list[dict]) -> list[str]:
    return [sample for rank in ranks for batch in rank["batches"] for sample in batch]


def test_every_sample_once_an_epoch_across_workers_and_ranks(project: Path) -> None:
    cases = [
        (1, 0, 0, 0, "train", 0),  # one process, no workers
        (1, 2, 0, 0, "train", 0),  # two workers
        (2, 2, 0, 0, "train", 0),  # two ranks x two workers
        (1, 2, 1, 0, "train", 0),  # the next epoch
        (1, 2, 0, 0, "train", 7),  # another seed
        (1, 2, 0, 0, "train", 0),  # the same seed again
        (1, 2, 0, 9, "train", 0),  # resumed after 9 batches
        (2, 2, 0, 0, "val", 0),  # evaluation on two ranks
    ]
    plain, workers, ranks, epoch_1, seed_7, again, resumed, val = orders(project, *cases)
    everything = {f"id{n}" for n in range(sum(TRAIN_SHARDS))}
    for run in (plain, workers, ranks, epoch_1, seed_7):
        assert sorted(ids(run)) == sorted(everything)  # each exactly once
    assert [rank["len"] for rank in ranks] == [12, 12]  # DDP: the same number of steps
    assert all(len(batch) == 4 for rank in ranks for batch in rank["batches"])
    assert workers == plain  # the batches do not depend on the worker count
    assert ids(epoch_1) != ids(workers) and ids(seed_7) != ids(workers)
    assert again == workers
    assert resumed[0]["len"] == 24 - 9
    assert resumed[0]["batches"] == workers[0]["batches"][9:]  # exactly the rest
    first_val = sum(TRAIN_SHARDS)
    assert sorted(ids(val), key=lambda s: int(s[2:])) == [
        f"id{n}" for n in range(first_val, first_val + sum(VAL_SHARDS))
    ]  # every validation sample once, in shard order


def test_remainder_is_dropped_evenly_and_never_duplicated(project: Path) -> None:
    """97 samples on 2 ranks: 48 each, 12 batches each; one sample waits for another
    epoch (a different one each epoch: the shard order changes)."""
    extra = project / "shards" / "train" / "part-5.jsonl"
    extra.write_text(json.dumps({"text": "id96 good", "label": "pos"}) + "\n")
    try:
        (ranks,) = orders(project, (2, 2, 0, 0, "train", 0))
    finally:
        extra.unlink()
    seen = ids(ranks)
    assert len(seen) == len(set(seen)) == 96 and [r["len"] for r in ranks] == [12, 12]


def test_shard_index_is_reused_and_recounted_when_a_shard_changes(project: Path) -> None:
    orders(project, (1, 0, 0, 0, "val", 0))
    (index_file,) = (project / "runs" / "cache").glob("shards-shards-val-*.json")  # data.cache_dir
    index = json.loads(index_file.read_text())
    assert {name: entry["samples"] for name, entry in index.items()} == {
        "part-0.jsonl": 9,
        "part-1.jsonl": 8,
    }
    shard = project / "shards" / "val" / "part-1.jsonl"
    original = shard.read_text()
    shard.write_text(original + json.dumps({"text": "id0 bad", "label": "neg"}) + "\n")
    try:
        (val,) = orders(project, (1, 0, 0, 0, "val", 0))
        assert len(ids(val)) == 18
        assert json.loads(index_file.read_text())["part-1.jsonl"]["samples"] == 9
    finally:
        shard.write_text(original)


def test_bad_shards_say_what_is_wrong(project: Path, tmp_path: Path) -> None:
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "a.jsonl").write_text('{"text": "fine", "label": "pos"}\n{oops\n')
    (tmp_path / "val").mkdir()
    cases = {
        "": f"data.root {tmp_path} has no val/*.jsonl shards",
        "val": f"{tmp_path / 'train' / 'a.jsonl'}:2: not valid JSON",
    }
    for make, message in cases.items():
        if make:
            (tmp_path / make / "b.jsonl").write_text('{"text": "x", "label": "neg"}\n')
        result = run_in_project(
            project, "-m", PKG, "train", "--set", f"data.root={tmp_path}",
            "--set", f"train.out_dir={tmp_path / 'run'}",
        )  # fmt: skip
        assert result.returncode == 1 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


# Slow: training runs, killed and resumed.

TRAIN = [
    "data.name=slowshards",
    "data.shuffle_buffer=8",
    "model.width=16",
    "model.depth=1",
    "train.epochs=2",
    "train.batch_size=4",
    "train.device=cpu",
    "train.checkpoint_every=5",
]


def train_command(
    project: Path, out: Path, *sets: str, launcher: tuple[str, ...] = ()
) -> list[str]:
    settings = [f"data.root={project / 'shards'}", *TRAIN, f"train.out_dir={out}", *sets]
    return [
        sys.executable,
        *launcher,
        "-m",
        PKG,
        "train",
        *[a for s in settings for a in ("--set", s)],
    ]


def environment(project: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")


def train(
    project: Path, out: Path, *sets: str, launcher: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """A training run to its end; fails the test if it fails."""
    result = subprocess.run(
        train_command(project, out, *sets, launcher=launcher),
        cwd=project,
        env=environment(project),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=True)["model_state_dict"]


def kill_then_resume(
    project: Path, out: Path, step: int, *sets: str, launcher: tuple[str, ...] = ()
) -> None:
    """Train, SIGKILL the whole job once step-`step`.pt exists, resume with train.resume=auto."""
    command = train_command(project, out, *sets, launcher=launcher)
    proc = subprocess.Popen(
        command,
        cwd=project,
        env=environment(project),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    kill_tree_once(proc, out / f"step-{step:08d}.pt")
    epoch_killed = torch.load(out / "last.pt", weights_only=True)["epoch"]
    assert epoch_killed == 0  # mid-epoch: the resumed run starts inside epoch 1
    resumed = train(project, out, *sets, "train.resume=auto", launcher=launcher)
    assert f"resuming from {out / 'last.pt'}" in resumed.stdout


def assert_same_weights(path: Path, reference: Path) -> None:
    got, want = weights(path), weights(reference)
    different = [name for name in want if not torch.equal(got[name], want[name])]
    assert not different, f"{path} differs from {reference} in {different}"


@pytest.mark.slow
def test_sigkill_then_resume_with_two_workers_is_bit_identical(
    project: Path, tmp_path: Path
) -> None:
    """The reference reads the shards in the main process; the killed and the resumed
    runs with 2 workers: the batches, and so the weights, are the same."""
    train(project, tmp_path / "reference", "data.num_workers=0")
    out = tmp_path / "run"
    kill_then_resume(project, out, 10, "data.num_workers=2")
    assert torch.load(out / "last.pt", weights_only=True)["step"] == 48  # 2 epochs of 24
    assert_same_weights(out / "last.pt", tmp_path / "reference" / "last.pt")


@pytest.mark.slow
def test_sigkill_then_resume_under_torchrun_is_bit_identical(project: Path, tmp_path: Path) -> None:
    launcher = ("-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2")
    train(project, tmp_path / "reference", "data.num_workers=0", launcher=launcher)
    out = tmp_path / "run"
    kill_then_resume(project, out, 5, "data.num_workers=1", launcher=launcher)
    assert torch.load(out / "last.pt", weights_only=True)["step"] == 24  # 2 epochs of 12
    assert_same_weights(out / "last.pt", tmp_path / "reference" / "last.pt")


# Parquet shards (the "table-shards" kind): ids read back from the standardised id column.
TABLE_ORDERS = """
import json, sys
import torch
from tables.config import load_config
from tables.data import build_data, build_loaders
from tables.runtime import DistInfo

sets = [f"data.root={sys.argv[1]}", "train.batch_size=4", "data.num_workers=2",
        "data.shuffle_buffer=8"]
config = load_config(None, sets)
bundle = build_data(config.data, 0)
ids = bundle.state["columns"][0]
result = []
for world, skip in ((2, 0), (1, 0), (1, 5)):
    for rank in range(world):
        train, _, stream = build_loaders(bundle, config, DistInfo(rank, world), torch.device("cpu"))
        stream.set_epoch(1, skip * 4)
        column = [b["inputs"][:, 0] * ids["std"] + ids["mean"] for b in train]
        result.append([[round(v) for v in batch.tolist()] for batch in column])
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def table_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    where = tmp_path_factory.mktemp("tables")
    path = generate(where, "tables", task="tabular-classification", dataset="table-shards")
    rng, first = random.Random(0), 0
    for split, sizes in (("train", [40, 25, 31]), ("val", VAL_SHARDS)):
        (path / "shards" / split).mkdir(parents=True)
        for shard, size in enumerate(sizes):
            ids = list(range(first, first + size))
            first += size
            x = [rng.gauss(0, 1) if i % 7 else None for i in ids]  # nulls: a missing flag
            table = {
                "id": ids,
                "colour": [rng.choice(["red", "blue", None]) for _ in ids],
                "x": x,
                "label": ["hi" if (v or 0) > 0 else "lo" for v in x],
            }
            where = path / "shards" / split / f"part-{shard}.parquet"
            pq.write_table(pa.table(table), where, row_group_size=10)  # row groups to skip
    return path


def test_a_damaged_parquet_shard_is_one_line_naming_it(table_project: Path, tmp_path: Path) -> None:
    root = tmp_path / "shards"
    shutil.copytree(table_project / "shards", root)
    shard = root / "train" / "part-1.parquet"
    shard.write_bytes(shard.read_bytes()[:-100])  # a copy cut short: the footer is gone
    result = run_in_project(table_project, "-m", "tables", "train", "--set", f"data.root={root}")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"{shard}: not a readable Parquet shard" in result.stderr
    # the footer whole, a page damaged (was: a thrift error naming nothing, in two lines)
    shutil.copy(table_project / "shards" / "train" / "part-1.parquet", shard)
    damaged = bytearray(shard.read_bytes())
    damaged[100:400] = b"\xab" * 300
    shard.write_bytes(bytes(damaged))
    result = run_in_project(table_project, "-m", "tables", "train", "--set", f"data.root={root}")
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert f"error: {shard}: a damaged Parquet shard" in result.stderr


def test_parquet_rows_once_an_epoch_across_ranks_and_resumed_exactly(table_project: Path) -> None:
    root = table_project / "shards"
    result = run_in_project(table_project, "-c", TABLE_ORDERS, str(root))
    assert result.returncode == 0, result.stderr
    rank_0, rank_1, alone, resumed = json.loads(result.stdout)
    assert len(rank_0) == len(rank_1) == 12
    assert sorted(i for batch in rank_0 + rank_1 for i in batch) == list(range(96))
    assert resumed == alone[5:]


@pytest.mark.slow
def test_parquet_shards_train_and_evaluate(table_project: Path, tmp_path: Path) -> None:
    root, out = table_project / "shards", tmp_path / "run"
    sets = [f"data.root={root}", f"train.out_dir={out}", "train.epochs=1", "train.batch_size=8"]
    trained = run_in_project(
        table_project, "-m", "tables", "train", *[a for s in sets for a in ("--set", s)]
    )
    assert trained.returncode == 0, trained.stderr
    evaluated = run_in_project(
        table_project, "-m", "tables", "evaluate", "--checkpoint", str(out / "last.pt"), "--json"
    )
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout.splitlines()[-1])["num_samples"] == sum(VAL_SHARDS)
