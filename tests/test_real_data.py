"""Issue 14: data as users bring it, through the file dataset kinds of generated projects.

CSV tables with categories, missing cells, unseen categories and missing targets (for
regression and for tabular classification); image folders with truncated, fake, empty,
hidden, odd-mode and EXIF-rotated files, empty and validation-only classes, and seeded
augmentation; text as CSV, TSV and JSONL. Each group of checks is a pytest file run
inside a real generated project (one project per kind), plus the command line's answer
to bad files: one message, exit 1, no traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import generate, run_in_project

from ptgen.components import add_component

PKG = "realdata"

# kind -> (task, dataset kind, module name)
KINDS = {
    "regression": ("tabular-regression", "csv", "table"),
    "classification": ("tabular-classification", "csv", "table"),
    "image": ("image-classification", "image-folder", "images"),
    "text": ("sequence-classification", "text", "texts"),
}


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Generated on first use, one per kind."""
    made: dict[str, Path] = {}

    class Lazy(dict):
        def __missing__(self, kind: str) -> Path:
            task, dataset, module = KINDS[kind]
            path = generate(tmp_path_factory.mktemp(kind), name=PKG, task=task)
            add_component(path, "dataset", module, dataset)
            made[kind] = path
            return path

    return Lazy()


def run_checks(project: Path, code: str) -> None:
    """Run `code` as a pytest file inside the project; its failures are ours."""
    test_file = project / "tests" / "test_issue14_checks.py"
    test_file.write_text(code.lstrip(), encoding="utf-8")
    try:
        result = run_in_project(
            project, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)
        )
    finally:
        test_file.unlink()
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


CSV_COMMON = """
from pathlib import Path

import pytest
import torch

from realdata.config import ConfigError
from realdata.data import build_data
from realdata.data.table import Options, encode_features, read_table


def write(path: Path, *lines: str) -> Path:
    path.write_text("\\n".join(lines) + "\\n", encoding="utf-8")
    return path
"""

REGRESSION_CHECKS = CSV_COMMON + """

TRAIN = [
    "a,colour,const,id,y",
    "1,red,k,1,10",
    "2,blue,k,2,20",
    "NA,red,k,3,30",
    "3,green,k,4,NA",
    "5,,k,5,50",
]


def test_kinds_missing_cells_categories_and_dropped_targets(tmp_path: Path, capsys) -> None:
    write(tmp_path / "train.csv", *TRAIN)
    write(tmp_path / "val.csv", "a,colour,const,id,y", "4,purple,zzz,9,40", "?,red,k,9,")
    cfg = Options(name="table", root=str(tmp_path), target="y", ignore=("id",))
    bundle = build_data(cfg, seed=0)
    err = capsys.readouterr().err
    assert "train.csv: 1 of 5 rows dropped: their target (y) is missing" in err
    assert "val.csv: 1 of 2 rows dropped" in err
    kinds = "1 numeric and 1 categorical columns"
    assert f"{kinds}; left out: id (data.ignore), const (constant)" in err
    state = bundle.state
    # blue is seen once: too rare to learn, so it is "unknown" like an unseen category
    assert state["features"] == ["a", "a (missing)", "colour=red", "colour (missing)"]
    present = torch.tensor([1.0, 2.0, 5.0], dtype=torch.float64)
    mean, std = float(present.mean()), float(present.std())
    numeric = {"name": "a", "missing": True, "kind": "numeric", "mean": mean, "std": std}
    assert state["columns"][0] == numeric
    rows = torch.stack([bundle.train[i]["inputs"] for i in range(len(bundle.train))])
    expected = [
        [(1 - mean) / std, 0, 1, 0],
        [(2 - mean) / std, 0, 0, 0],  # blue: unknown
        [0, 1, 1, 0],  # a missing: the training mean (0 once standardised) + indicator
        [(5 - mean) / std, 0, 0, 1],  # colour missing: indicator
    ]
    torch.testing.assert_close(rows, torch.tensor(expected, dtype=torch.float32))
    (val,) = [bundle.val[i]["inputs"] for i in range(len(bundle.val))]
    torch.testing.assert_close(val, torch.tensor([(4 - mean) / std, 0, 0, 0]))  # purple: unknown
    targets = torch.tensor([10.0, 20.0, 30.0, 50.0], dtype=torch.float64)
    assert state["target_mean"] == pytest.approx(float(targets.mean()))
    assert state["target_std"] == pytest.approx(float(targets.std()))
    scaled = (40 - 27.5) / float(targets.std())
    assert float(bundle.val[0]["targets"]) == pytest.approx(scaled, rel=1e-5)


def test_schema_is_saved_and_reused(tmp_path: Path) -> None:
    write(tmp_path / "train.csv", *TRAIN)
    write(tmp_path / "val.csv", "y,id,const,colour,a", "40,9,k,red,4")  # any column order
    cfg = Options(name="table", root=str(tmp_path), target="y", ignore=("id",))
    bundle = build_data(cfg, seed=0)
    torch.save({"data_state": bundle.state}, tmp_path / "state.pt")
    state = torch.load(tmp_path / "state.pt", weights_only=True)["data_state"]
    write(tmp_path / "train.csv", "a,colour,const,id,y", "100,blue,x,1,1", "200,blue,y,2,2")
    again = build_data(Options(name="table", root=str(tmp_path)), seed=3, state=state)
    assert again.state == bundle.state  # nothing refitted on the changed training file
    torch.testing.assert_close(again.val[0]["inputs"], bundle.val[0]["inputs"])
    table = read_table(write(tmp_path / "new.csv", "a,colour", "4,red"))  # no target: predict
    torch.testing.assert_close(encode_features(table, state)[0], bundle.val[0]["inputs"])


def test_categorical_ignore_and_na_values_options(tmp_path: Path) -> None:
    lines = ["zip,score,y", "1000,-,1", "2000,5,2", "1000,6,3", "2000,-,4", "1000,5,5", "2000,6,6"]
    write(tmp_path / "train.csv", *lines)
    write(tmp_path / "val.csv", *lines[:2])
    cfg = Options(name="table", root=str(tmp_path))
    with pytest.raises(ConfigError, match="no column 'nope'"):
        build_data(Options(**{**vars(cfg), "categorical": ("nope",)}), seed=0)
    with pytest.raises(ConfigError, match="data.ignore lists the target column 'y'"):
        build_data(Options(**{**vars(cfg), "ignore": ("y",)}), seed=0)
    plain = build_data(Options(**{**vars(cfg), "na_values": ("-",)}), seed=0).state
    assert [c["kind"] for c in plain["columns"]] == ["numeric", "numeric"]
    assert plain["columns"][1]["missing"] is True  # "-" is missing now
    state = build_data(Options(**{**vars(cfg), "categorical": ("zip",)}), seed=0).state
    assert [c["kind"] for c in state["columns"]] == ["categorical", "categorical"]  # "-" is text


@pytest.mark.parametrize(
    ("train", "val", "message"),
    [
        (["a,y", "1,1", "2,2"], ["a,y", "x,3"], "val.csv:2: column 'a' is not a number ('x')"),
        (["a,y", "1,1", "2,oops"], ["a,y", "3,3"], "train.csv:3: the target (y) is not a number"),
        (["a,a,y", "1,1,1"], ["a,a,y", "1,1,1"], "column names must be unique; repeated: a"),
        (["a,y", "1,1,9"], ["a,y", "1,1"], "train.csv:2: 3 cells, the header has 2"),
    ],
)
def test_bad_tables_name_the_file_and_line(
    tmp_path: Path, train: list[str], val: list[str], message: str
) -> None:
    write(tmp_path / "train.csv", *train)
    write(tmp_path / "val.csv", *val)
    with pytest.raises(ConfigError) as info:
        build_data(Options(name="table", root=str(tmp_path)), seed=0)
    assert message in str(info.value)
"""

CLASSIFICATION_CHECKS = CSV_COMMON + """

def test_string_labels_are_classes_stored_in_the_state(tmp_path: Path, capsys) -> None:
    rows = ["1,a1,Gentoo", "2,b2,Adelie", "NA,c3,Chinstrap", "4,d4,Adelie", "5,e5,"]
    write(tmp_path / "train.csv", "x,tag,species", *rows)
    write(tmp_path / "val.csv", "x,tag,species", "3,f6,Gentoo")
    bundle = build_data(Options(name="table", root=str(tmp_path)), seed=0)
    assert "left out: tag (no category seen twice)" in capsys.readouterr().err
    assert bundle.state["classes"] == ["Adelie", "Chinstrap", "Gentoo"]
    assert bundle.spec.num_outputs == 3 and bundle.spec.num_features == 2  # x, x (missing)
    assert [int(bundle.train[i]["targets"]) for i in range(4)] == [2, 0, 1, 0]
    assert bundle.val[0]["targets"].dtype == torch.long and int(bundle.val[0]["targets"]) == 2


def test_integer_labels_sort_as_numbers(tmp_path: Path) -> None:
    write(tmp_path / "train.csv", "x,y", "1,10", "2,9", "3,2", "4,10")
    write(tmp_path / "val.csv", "x,y", "1,9")
    state = build_data(Options(name="table", root=str(tmp_path)), 0).state
    assert state["classes"] == ["2", "9", "10"]


def test_unknown_and_single_classes_are_errors(tmp_path: Path) -> None:
    write(tmp_path / "train.csv", "x,y", "1,a", "2,b")
    write(tmp_path / "val.csv", "x,y", "1,c")
    with pytest.raises(ConfigError, match="val.csv: classes not seen in training: c"):
        build_data(Options(name="table", root=str(tmp_path)), 0)
    write(tmp_path / "train.csv", "x,y", "1,a", "2,a")
    with pytest.raises(ConfigError, match="every training row has the class 'a'"):
        build_data(Options(name="table", root=str(tmp_path)), 0)
"""

IMAGE_CHECKS = """
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader

from realdata.config import ConfigError
from realdata.data import build_data
from realdata.data._images import load_image
from realdata.data.images import Options


def make(root: Path, split: str, label: str, count: int, colour=(200, 30, 30)) -> None:
    (root / split / label).mkdir(parents=True, exist_ok=True)
    for i in range(count):
        Image.new("RGB", (12, 10), colour).save(root / split / label / f"{i}.png")


def options(root: Path, **changes) -> Options:
    return Options(name="images", root=str(root), image_size=8, **changes)


def test_bad_files_are_listed_together_or_skipped(tmp_path: Path, capsys) -> None:
    make(tmp_path, "train", "a", 4)
    make(tmp_path, "train", "b", 4, (30, 30, 200))
    Image.new("RGB", (40, 40), (1, 2, 3)).save(tmp_path / "train" / "b" / "good.jpg", quality=90)
    whole = (tmp_path / "train" / "b" / "good.jpg").read_bytes()
    (tmp_path / "train" / "b" / "cut.jpg").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "train" / "a" / "notes.png").write_text("not an image at all")
    (tmp_path / "train" / "a" / "zero.png").write_bytes(b"")
    with pytest.raises(ConfigError) as info:
        build_data(options(tmp_path), seed=0)
    message = str(info.value)
    assert message.startswith(f"3 of 12 image files in {tmp_path} cannot be used")
    assert "data.skip_bad_files=true" in message
    named = ["a/notes.png: not an image", "a/zero.png: empty file", "b/cut.jpg: truncated"]
    for line in named:
        assert f"\\n  train/{line}" in message, message
    bundle = build_data(options(tmp_path, skip_bad_files=True, val_fraction=0.25), seed=0)
    assert "left out 3 of 12 image files" in capsys.readouterr().err
    assert len(bundle.train) + len(bundle.val) == 9


def test_every_mode_is_converted_the_same_way(tmp_path: Path) -> None:
    palette = Image.new("P", (4, 4), 1)
    palette.putpalette([0, 0, 0, 255, 0, 0] + [0] * 762)
    images = {
        "grey.png": (Image.new("L", (4, 4), 128), [128, 128, 128]),
        "grey-alpha.png": (Image.new("LA", (4, 4), (0, 0)), [255, 255, 255]),  # on white
        "rgba.png": (Image.new("RGBA", (4, 4), (255, 0, 0, 128)), [255, 127, 127]),
        "palette.png": (palette, [255, 0, 0]),
        "sixteen.png": (Image.fromarray(np.full((4, 4), 32767, dtype=np.uint16)), [127, 127, 127]),
        "cmyk.jpg": (Image.new("CMYK", (4, 4), (0, 255, 255, 0)), [255, 0, 0]),
    }
    for name, (image, rgb) in images.items():
        image.save(tmp_path / name)
        with Image.open(tmp_path / name) as again:
            assert again.mode == image.mode, name  # the file really holds that mode
        pixels = load_image(tmp_path / name, 4, 10**8)  # (3, 4, 4)
        got = (pixels[:, 0, 0] * 255).round().tolist()
        assert all(abs(g - w) <= 2 for g, w in zip(got, rgb)), (name, got, rgb)
        torch.testing.assert_close(load_image(tmp_path / name, 4, 10**8), pixels)  # every time


def test_exif_orientation_is_applied(tmp_path: Path) -> None:
    image = Image.new("RGB", (16, 8), (0, 0, 255))
    image.paste((255, 0, 0), (0, 0, 8, 8))  # left half red, right half blue
    exif = image.getexif()
    exif[0x0112] = 6  # shown rotated 90 degrees clockwise: red on top
    image.save(tmp_path / "photo.jpg", exif=exif, quality=95)
    pixels = load_image(tmp_path / "photo.jpg", 8, 10**8)  # (3, 8, 8)
    assert pixels[0, 0, 4] > 0.9 and pixels[2, 0, 4] < 0.1  # top: red
    assert pixels[2, 7, 4] > 0.9 and pixels[0, 7, 4] < 0.1  # bottom: blue


def test_hidden_files_and_folders_are_ignored(tmp_path: Path) -> None:
    make(tmp_path, "train", "a", 3)
    make(tmp_path, "train", "b", 3)
    (tmp_path / "train" / "a" / ".DS_Store").write_bytes(b"\\0\\0\\0\\1Bud1")
    (tmp_path / "train" / "a" / "._0.png").write_bytes(b"\\0\\5\\26\\7")
    (tmp_path / "train" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "train" / "b" / ".thumbs").mkdir()
    (tmp_path / "train" / "b" / ".thumbs" / "0.png").write_text("x")
    bundle = build_data(options(tmp_path, val_fraction=0.34), seed=0)
    assert bundle.state["classes"] == ["a", "b"]
    assert len(bundle.train) + len(bundle.val) == 6


def test_empty_and_validation_only_classes_are_one_line_errors(tmp_path: Path) -> None:
    make(tmp_path, "train", "a", 3)
    (tmp_path / "train" / "empty").mkdir()
    with pytest.raises(ConfigError, match="without images in .*train: empty"):
        build_data(options(tmp_path), seed=0)
    (tmp_path / "train" / "empty").rmdir()
    make(tmp_path, "val", "a", 1)
    make(tmp_path, "val", "zebra", 1)
    with pytest.raises(ConfigError, match="val split has classes not seen in training: zebra"):
        build_data(options(tmp_path), seed=0)


def test_augmentation_depends_on_seed_epoch_and_index_only(tmp_path: Path) -> None:
    for label in "ab":
        (tmp_path / "train" / label).mkdir(parents=True)
        for i in range(4):
            array = np.random.default_rng(i).integers(0, 255, (12, 12, 3), dtype=np.uint8)
            Image.fromarray(array).save(tmp_path / "train" / label / f"{i}.png")
    plain = build_data(options(tmp_path, val_fraction=0.25), seed=7)
    bundle = build_data(options(tmp_path, val_fraction=0.25, augment="standard"), seed=7)
    for i in range(len(bundle.val)):  # evaluation never augments
        torch.testing.assert_close(bundle.val[i]["inputs"], plain.val[i]["inputs"])
    first = bundle.train[0]["inputs"]
    assert not torch.equal(first, plain.train[0]["inputs"])
    torch.testing.assert_close(bundle.train[0]["inputs"], first, rtol=0, atol=0)  # same draw
    bundle.train.set_epoch(1)
    assert not torch.equal(bundle.train[0]["inputs"], first)
    loader = DataLoader(bundle.train, batch_size=6, num_workers=2, persistent_workers=True)
    by_epoch = {}
    for epoch in (0, 1, 0):
        bundle.train.set_epoch(epoch)  # as the training sampler does before each epoch
        batch = next(iter(loader))["inputs"]
        by_epoch.setdefault(epoch, []).append(batch)
    torch.testing.assert_close(by_epoch[0][0], by_epoch[0][1], rtol=0, atol=0)  # workers agree
    assert not torch.equal(by_epoch[0][0], by_epoch[1][0])  # and follow the epoch
    bundle.train.set_epoch(1)
    in_process = torch.stack([bundle.train[i]["inputs"] for i in range(6)])
    torch.testing.assert_close(by_epoch[1][0], in_process, rtol=0, atol=0)
"""

TEXT_CHECKS = r"""
import json
from pathlib import Path

import pytest

from realdata.config import ConfigError
from realdata.data import build_data
from realdata.data.texts import Options


def test_csv_tsv_and_jsonl_give_the_same_rows(tmp_path: Path) -> None:
    rows = [("a fine film", "pos"), ("dull, so dull", "neg"), ("fine\u2028again", "pos")]
    (tmp_path / "t.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows))
    (tmp_path / "t.csv").write_text('text,label\n' + "".join(f'"{t}",{y}\n' for t, y in rows))
    records = [{"id": i, "text": t, "label": y} for i, (t, y) in enumerate(rows)]
    lines = [json.dumps(record, ensure_ascii=False) for record in records]  # a raw U+2028
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n\n")
    encoded = []
    for name in ("t.tsv", "t.csv", "t.jsonl"):
        bundle = build_data(Options(name="texts", root=str(tmp_path / name), val_fraction=0.34), 0)
        encoded.append([bundle.train[i]["inputs"].tolist() for i in range(len(bundle.train))])
        assert bundle.state["classes"] == ["neg", "pos"]
    assert encoded[0] == encoded[1] == encoded[2]


def test_jsonl_split_files_and_numeric_labels(tmp_path: Path) -> None:
    good, bad = '{"text": "good", "stars": 5}', '{"text": "bad", "stars": 1}'
    (tmp_path / "train.jsonl").write_text(f"{good}\n{bad}\n")
    (tmp_path / "val.jsonl").write_text('{"stars": 5, "text": "good"}\n')
    bundle = build_data(Options(name="texts", root=str(tmp_path), target="stars"), 0)
    assert bundle.state["classes"] == ["1", "5"] and int(bundle.val[0]["targets"]) == 1


@pytest.mark.parametrize(
    ("name", "body", "message"),
    [
        ("bad.jsonl", b'{"text": "b", "label": \n', "bad.jsonl:2: not valid JSON"),
        ("list.jsonl", b'["b", "y"]\n', "list.jsonl:2: not a JSON object"),
        ("nolabel.jsonl", b'{"text": "b"}\n', "nolabel.jsonl:2: the label"),
        ("latin.jsonl", b'{"text": "caf\xe9", "label": "y"}\n', "latin.jsonl:2: not UTF-8"),
    ],
)
def test_bad_lines_name_the_file_and_line(
    tmp_path: Path, name: str, body: bytes, message: str
) -> None:
    (tmp_path / name).write_bytes(b'{"text": "a", "label": "x"}\n' + body)  # line 2 is bad
    with pytest.raises(ConfigError, match=message):
        build_data(Options(name="texts", root=str(tmp_path / name)), 0)
"""


@pytest.mark.parametrize(
    ("kind", "checks"),
    [
        ("regression", REGRESSION_CHECKS),
        ("classification", CLASSIFICATION_CHECKS),
        ("image", IMAGE_CHECKS),
        ("text", TEXT_CHECKS),
    ],
)
def test_file_kinds_on_data_as_users_bring_it(
    projects: dict[str, Path], kind: str, checks: str
) -> None:
    run_checks(projects[kind], checks)


def test_train_lists_every_bad_image_at_once_and_writes_nothing(
    projects: dict[str, Path], tmp_path: Path
) -> None:
    from PIL import Image

    for label in ("cat", "dog"):
        (tmp_path / "imgs" / "train" / label).mkdir(parents=True)
        for i in range(8):
            Image.new("RGB", (9, 9), (i * 20, 0, 0)).save(
                tmp_path / "imgs" / "train" / label / f"{i}.png"
            )
    cut = tmp_path / "imgs" / "train" / "cat" / "7.png"
    Image.effect_noise((64, 64), 50).save(cut)
    cut.write_bytes(cut.read_bytes()[:2000])  # a download cut short
    (tmp_path / "imgs" / "train" / "dog" / "3.png").write_text("a text file named .png")
    out = tmp_path / "run"
    sets = ["data.name=images", f"data.root={tmp_path / 'imgs'}", f"train.out_dir={out}"]
    result = run_in_project(
        projects["image"], "-m", PKG, "train", *[a for s in sets for a in ("--set", s)]
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("error: 2 of 16 image files in "), lines
    assert lines[1:] == [
        "  train/cat/7.png: truncated",
        "  train/dog/3.png: not an image Pillow can read",
    ]
    assert not list(out.glob("*.pt"))
