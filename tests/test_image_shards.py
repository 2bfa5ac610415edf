"""Issue 21, item 3: the "image-shards" dataset kind streams tar shards in WebDataset
layout (KEY.png + KEY.cls) through data/_streams.py.

In a generated project, on tiny 8x8 PNGs in three tar shards of unequal sizes: every
sample once an epoch across 2 ranks x 2 workers, a resumed epoch exactly the rest of the
uninterrupted one, evaluation covering every validation sample once; a sample that is not
an image, or has no .cls, is a one-line error naming the tar and the key, and so is a file
that is not a tar. Slow: a few
steps trained from the shards, then evaluated and predicted from.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from helpers import generate, run_in_project
from PIL import Image

PKG = "tars"
TRAIN_SHARDS = [15, 9, 16]  # 40 samples: 10 batches of 4, 5 per rank of 2
VAL_SHARDS = [7, 5]

# The sample number of every batch, read back from its image: each image is one grey
# level, sample n has level 4 * n (normalised: 2 * level / 255 - 1).
ORDERS = """
import json, sys
import torch
from tars.config import load_config
from tars.data import build_data, build_loaders
from tars.runtime import DistInfo

sets = [f"data.root={sys.argv[1]}", "train.batch_size=4", "data.num_workers=2",
        "data.shuffle_buffer=8", "data.image_size=8"]
config = load_config(None, sets)
bundle = build_data(config.data, 0)
result = {"classes": bundle.state["classes"]}
for name, world, skip, split in json.loads(sys.argv[2]):
    ranks = []
    for rank in range(world):
        info = DistInfo(rank, world)
        train, val, stream = build_loaders(bundle, config, info, torch.device("cpu"))
        stream.set_epoch(1, skip * 4)
        level = lambda b: ((b["inputs"][:, 0, 0, 0] + 1) * 255 / 2 / 4).round().long()
        ranks.append([level(b).tolist() for b in (train if split == "train" else val)])
    result[name] = ranks
print(json.dumps(result))
"""


def png(level: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (level, level, level)).save(buffer, format="PNG")
    return buffer.getvalue()


def write_tar(path: Path, members: list[tuple[str, bytes]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def sample(number: int) -> list[tuple[str, bytes]]:
    label = ("cat", "dog", "eel")[number % 3]
    return [(f"s{number:04d}.png", png(4 * number)), (f"s{number:04d}.cls", label.encode())]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = generate(tmp_path_factory.mktemp("image-shards"), PKG, dataset="image-shards")
    number = 0
    for split, sizes in (("train", TRAIN_SHARDS), ("val", VAL_SHARDS)):
        for shard, size in enumerate(sizes):
            members = [m for n in range(number, number + size) for m in sample(n)]
            write_tar(path / "shards" / split / f"part-{shard}.tar", members)
            number += size
    return path


def orders(project: Path, root: Path, *cases: tuple[str, int, int, str]) -> dict:
    result = run_in_project(project, "-c", ORDERS, str(root), json.dumps(cases))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_every_sample_once_across_ranks_and_workers_and_resumed_exactly(project: Path) -> None:
    cases = [("ranks", 2, 0, "train"), ("alone", 1, 0, "train"), ("resumed", 1, 3, "train"),
             ("val", 2, 0, "val")]  # fmt: skip
    got = orders(project, project / "shards", *cases)
    assert got["classes"] == ["cat", "dog", "eel"]
    rank_0, rank_1 = got["ranks"]
    assert len(rank_0) == len(rank_1) == 5  # DDP: the same number of steps
    assert sorted(n for batch in rank_0 + rank_1 for n in batch) == list(range(40))
    (alone,), (resumed,) = got["alone"], got["resumed"]
    assert sorted(n for batch in alone for n in batch) == list(range(40))
    assert resumed == alone[3:]  # exactly the rest of the epoch
    first_val = sum(TRAIN_SHARDS)
    val = sorted(n for rank in got["val"] for batch in rank for n in batch)
    assert val == list(range(first_val, first_val + sum(VAL_SHARDS)))


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([("s9000.png", b"not an image"), ("s9000.cls", b"cat")], "s9000: cannot read the image"),
        ([("s9000.png", png(0))], "s9000: no .cls file"),
    ],
)
def test_a_bad_sample_is_one_line_naming_the_tar_and_key(
    project: Path, tmp_path: Path, bad: list, message: str
) -> None:
    root = tmp_path / "shards"
    write_tar(root / "train" / "part-0.tar", sample(0) + bad + sample(1) + sample(2))
    write_tar(root / "val" / "part-0.tar", sample(3))
    result = run_in_project(
        project, "-m", PKG, "train", "--set", f"data.root={root}", "--set", "train.batch_size=4"
    )
    assert result.returncode == 1
    assert f"{root / 'train' / 'part-0.tar'}:{message}" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_broken_tar_is_one_line_naming_it(project: Path, tmp_path: Path) -> None:
    root = tmp_path / "shards"
    write_tar(root / "val" / "part-0.tar", sample(0))
    (root / "train").mkdir()
    (root / "train" / "part-0.tar").write_bytes(b"x" * 1024)  # not a tar (e.g. a failed copy)
    result = run_in_project(project, "-m", PKG, "train", "--set", f"data.root={root}")
    assert result.returncode == 1
    assert f"{root / 'train' / 'part-0.tar'}: not a readable tar file" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_tar_cut_short_between_samples_is_one_line_naming_it(
    project: Path, tmp_path: Path
) -> None:
    """tarfile reads a tar cut at a member boundary to the cut without a word: the missing
    end-of-archive blocks give it away (it trained on 22 of 40 samples before)."""
    root = tmp_path / "shards"
    write_tar(root / "val" / "part-0.tar", sample(0))
    whole = root / "train" / "part-0.tar"
    write_tar(whole, [m for n in range(10) for m in sample(n)])
    with tarfile.open(whole) as tar:
        cut = [m.offset for m in tar.getmembers()][12]  # the header of sample 6's first file
    whole.write_bytes(whole.read_bytes()[:cut])
    result = run_in_project(project, "-m", PKG, "train", "--set", f"data.root={root}")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"{whole}: the tar file is cut short after 6 samples" in result.stderr


@pytest.mark.slow
def test_tar_shards_train_evaluate_and_predict(project: Path, tmp_path: Path) -> None:
    root, out = project / "shards", tmp_path / "run"
    sets = [f"data.root={root}", f"train.out_dir={out}", "train.epochs=1", "train.batch_size=8",
            "data.image_size=8"]  # fmt: skip
    trained = run_in_project(project, "-m", PKG, "train", *[a for s in sets for a in ("--set", s)])
    assert trained.returncode == 0, trained.stderr
    checkpoint = str(out / "last.pt")
    evaluated = run_in_project(project, "-m", PKG, "evaluate", "--checkpoint", checkpoint, "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout.splitlines()[-1])["num_samples"] == sum(VAL_SHARDS)
    image = tmp_path / "grey.png"
    image.write_bytes(png(100))
    predicted = run_in_project(
        project, "-m", PKG, "predict", "--checkpoint", checkpoint, str(image)
    )
    assert predicted.returncode == 0, predicted.stderr
    assert any(name in predicted.stdout for name in ("cat", "dog", "eel"))


SIXTEEN_BIT = """
import io
import numpy as np
from PIL import Image
from tars.data.image_shards import pixels

buffer = io.BytesIO()
Image.fromarray(np.full((8, 8), 32767, dtype=np.uint16)).save(buffer, format="PNG")
level = (pixels(buffer.getvalue(), "part-0.tar:s0", 8, 10**8) * 0.5 + 0.5) * 255  # (3, 8, 8)
print(level.round().unique().tolist())
"""


def test_sixteen_bit_grey_is_scaled_from_its_full_range(project: Path) -> None:
    # The image-folder kind's conversion (one to_rgb, in data/_inputs.py): Pillow's own
    # would clip 32767 of 65535 to white, 255.
    result = run_in_project(project, "-c", SIXTEEN_BIT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[127.0]"
