"""What a generated project promises when things go wrong (issue 18, the project's side).

Each test reproduces a fault a user met (damaged runs, two runs in one out_dir, a full
disk, odd files, odd input) with real processes and real files, and checks the promise:
nothing lost, nothing silently wrong, one line instead of a traceback. Future faults go
here (the ptgen side is tests/test_faults_ptgen.py).
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import PAGE, SLOW_DATASET, fill_disk, generate, run_in_project

from ptgen.components import add_component

PKG = "faulty"
FAST = ["data.num_samples=64", "data.image_size=8", "train.batch_size=16", "train.epochs=2"]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = generate(tmp_path_factory.mktemp("faults"), name="faulty")
    (path / "src" / PKG / "data" / "slowsynthetic.py").write_text(SLOW_DATASET)
    add_component(path, "dataset", "images", "image-folder")
    return path


def train(project: Path, out: Path, *sets: str) -> subprocess.CompletedProcess[str]:
    args = [a for s in [*FAST, f"train.out_dir={out}", *sets] for a in ("--set", s)]
    return run_in_project(project, "-m", PKG, "train", *args)


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 1, result.stdout + result.stderr
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]


def damage(path: Path) -> None:
    path.write_bytes(os.urandom(2048))


# --- damaged runs --------------------------------------------------------------------


def test_resume_with_every_newer_checkpoint_damaged_falls_back_to_best(
    project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    assert train(project, out, "train.checkpoint_every=2").returncode == 0
    for path in [out / "last.pt", *out.glob("step-*.pt")]:
        damage(path)
    best = (out / "best.pt").read_bytes()
    rows = (out / "metrics.csv").read_text().count("\n")
    result = train(project, out, "train.resume=auto", "train.epochs=3")
    assert result.returncode == 0, result.stderr
    assert "damaged, or not a checkpoint at all" in result.stderr  # not "arbitrary unpickling"
    assert f"resuming from {out / 'best.pt'}" in result.stderr
    assert (out / "metrics.csv").read_text().count("\n") >= rows - 1  # the log was kept
    assert (out / "best.pt").read_bytes() != best or "epoch 3/3" in result.stdout


def test_resume_with_every_checkpoint_damaged_refuses_and_keeps_the_run(
    project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    assert train(project, out).returncode == 0
    for path in out.glob("*.pt"):
        damage(path)

    def files() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != ".lock"}

    before = files()
    result = train(project, out, "train.resume=auto")
    assert_one_line_error(result, "none of its checkpoints loads", "best.pt", "last.pt")
    assert files() == before


def test_a_pickle_of_arbitrary_objects_is_named_as_such(project: Path, tmp_path: Path) -> None:
    evil = tmp_path / "evil.pt"
    script = "import torch\nclass Payload: ...\ntorch.save({'x': Payload()}, 'evil.pt')"
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True)
    result = run_in_project(project, "-m", PKG, "evaluate", "--checkpoint", str(evil))
    assert_one_line_error(result, "needs arbitrary unpickling")


def test_a_damaged_metrics_row_does_not_stop_a_resume(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert train(project, out, "train.epochs=1").returncode == 0
    with open(out / "metrics.csv", "ab") as handle:
        handle.write(b"7,1,tr\x00\x00\x00\x00\n\x00\x00\x00")  # a torn write after a power loss
    result = train(project, out, "train.resume=auto")
    assert result.returncode == 0, result.stderr
    assert "skipped" in result.stderr and "damaged row" in result.stderr
    rows = list(csv.DictReader(open(out / "metrics.csv", encoding="utf-8")))
    assert rows and all(row["step"].isdigit() for row in rows)


@pytest.mark.slow
def test_a_kill_while_metrics_are_rewritten_never_empties_the_file(
    project: Path, tmp_path: Path
) -> None:
    """The resume rewrite of a large metrics.csv, SIGKILLed at several moments: the file
    is always whole (the old one, or the new one), never truncated."""
    path = tmp_path / "metrics.csv"
    columns = ("step", "epoch", "split", "loss", "accuracy", "lr", "samples_per_sec")
    body = "".join(f"{i},1,train,0.5,,0.001,100\n" for i in range(1, 300_001))
    original = ",".join(columns) + "\n" + body
    script = (
        f"from pathlib import Path\nfrom {PKG}.monitor import MetricsFile\n"
        f"MetricsFile(Path({str(path)!r}), {columns!r}, resume_step=10**9)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    for delay in (0.05, 0.15, 0.3, 0.5, 0.8):
        path.write_text(original, encoding="utf-8")
        proc = subprocess.Popen([sys.executable, "-c", script], env=env)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert path.read_text(encoding="utf-8").count("\n") == 300_001, delay


# --- two runs, one out_dir ------------------------------------------------------------


def test_a_second_run_into_a_busy_out_dir_is_refused_naming_the_first(
    project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    # long enough to outlast the second process's start on a loaded machine; stopped below
    sets = [*FAST, "data.name=slowsynthetic", "train.epochs=100", f"train.out_dir={out}"]
    args = [a for s in sets for a in ("--set", s)]
    env = {**os.environ, "PYTHONPATH": str(project / "src"), "OMP_NUM_THREADS": "1"}
    first = subprocess.Popen(
        [sys.executable, "-m", PKG, "train", *args],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (out / ".lock").exists() or not (out / ".lock").read_text().strip():
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.05)
    second = train(project, out, "data.name=slowsynthetic")
    while not (out / "metrics.csv").exists():  # the loop has begun: signals are handled
        assert first.poll() is None and time.monotonic() < deadline + 120, first.communicate()
        time.sleep(0.05)
    first.send_signal(signal.SIGTERM)  # a clean stop: finishes its step, writes last.pt
    stdout, stderr = first.communicate(timeout=600)
    assert_one_line_error(second, f"PID {first.pid}", str(out))
    assert first.returncode == 143, stderr
    assert (out / "last.pt").is_file()


def test_temporary_files_of_a_killed_writer_are_removed_on_the_next_start(
    project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    stale = out / ".last.pt.99999.tmp"
    stale.write_bytes(b"\0" * 4096)
    assert train(project, out, "train.epochs=1").returncode == 0
    assert not stale.exists()


# --- a full disk ------------------------------------------------------------------------


def test_a_full_disk_names_the_file_and_keeps_the_last_checkpoint(
    project: Path, small_disk: Callable[[int], Path]
) -> None:
    out = small_disk(2048) / "run"
    assert train(project, out, "train.epochs=1").returncode == 0
    last = (out / "last.pt").read_bytes()
    fill_disk(out.parent, leave=PAGE)
    result = train(project, out, "train.resume=auto", "train.epochs=2")
    assert_one_line_error(result, "no space left on the device", str(out))
    assert (out / "last.pt").read_bytes() == last


# --- odd files ------------------------------------------------------------------------


def text_dataset_check(
    project: Path, tmp_path: Path, name: str, body: bytes, code: str, root: Path | None = None
) -> str:
    """Write a data file, build the `reviews` text dataset on it (or on `root`), run `code`."""
    data = tmp_path / name
    data.write_bytes(body)
    script = (
        f"from {PKG}.data import build_data\nfrom {PKG}.data.reviews import Options\n"
        f"options = Options(name='reviews', root={str(root or data)!r}, val_fraction=0.5)\n"
        "bundle = build_data(options, 0)\n" + code
    )
    result = run_in_project(project, "-c", script)
    return result.stdout + result.stderr


@pytest.fixture(scope="module")
def text_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = generate(tmp_path_factory.mktemp("text"), name="faulty", task="sequence-classification")
    add_component(path, "dataset", "reviews", "text")
    return path


def test_tsv_quotes_are_characters_one_line_one_row(text_project: Path, tmp_path: Path) -> None:
    rows = [f'he said "great {i}\tpos' if i % 2 else f'"bad" {i}\tneg' for i in range(202)]
    body = ("text\tlabel\n" + "\n".join(rows) + "\n").encode()
    output = text_dataset_check(
        text_project, tmp_path, "q.tsv", body, "print('rows', len(bundle.train) + len(bundle.val))"
    )
    assert "rows 202" in output, output


@pytest.mark.parametrize(
    ("name", "body", "needle"),
    [
        ("latin1.tsv", "text\tlabel\nok\tpos\ncaf\xe9\tneg\n".encode("latin-1"), "latin1.tsv:3"),
        ("empty.tsv", b"text\tlabel\nfine\tpos\nno label\t \n", "empty.tsv:3: the label"),
        ("latin1.csv", "text,label\nok,pos\nna\xefve,neg\n".encode("latin-1"), "latin1.csv:3"),
    ],
)
def test_bad_text_files_name_the_file_and_line(
    text_project: Path, tmp_path: Path, name: str, body: bytes, needle: str
) -> None:
    output = text_dataset_check(text_project, tmp_path, name, body, "")
    assert needle in output and "ConfigError" in output, output


def test_a_huge_text_cell_is_read(text_project: Path, tmp_path: Path) -> None:
    (tmp_path / "val.tsv").write_text("text\tlabel\nshort\tpos\nshort\tneg\n")
    train_rows = "text\tlabel\n" + "word " * 10_000_000 + "\tpos\nshort\tneg\n"  # 50 MB
    output = text_dataset_check(
        text_project, tmp_path, "train.tsv", train_rows.encode(), "print('ok')", root=tmp_path
    )
    assert "ok" in output.splitlines(), output[-2000:]  # stdout first, then data: notes


def write_images(root: Path, classes: dict[str, int], size: tuple[int, int] = (6, 6)) -> None:
    from PIL import Image

    for name, count in classes.items():
        (root / "train" / name).mkdir(parents=True)
        for i in range(count):
            Image.new("RGB", size, (i * 20, 0, 0)).save(root / "train" / name / f"{i}.png")


def test_a_class_folder_without_images_is_an_error(project: Path, tmp_path: Path) -> None:
    write_images(tmp_path / "imgs", {"cat": 8, "dog": 8, "emu": 0})
    result = train(project, tmp_path / "run", "data.name=images", f"data.root={tmp_path / 'imgs'}")
    assert_one_line_error(result, "without images", "emu")


def test_an_image_over_the_pixel_limit_is_named(project: Path, tmp_path: Path) -> None:
    write_images(tmp_path / "imgs", {"cat": 8, "dog": 8})
    write_images(tmp_path / "big", {"dog": 1}, size=(300, 300))
    (tmp_path / "big" / "train" / "dog" / "0.png").rename(
        tmp_path / "imgs" / "train" / "dog" / "big.png"
    )
    result = train(
        project,
        tmp_path / "run",
        "data.name=images",
        f"data.root={tmp_path / 'imgs'}",
        "data.max_image_pixels=20000",
    )
    assert_one_line_error(result, "data.max_image_pixels", "big.png")


def test_a_one_row_csv_is_refused_not_scored_perfect(tmp_path: Path) -> None:
    project = generate(tmp_path, name="faulty", task="tabular-regression", dataset="csv")
    (tmp_path / "one.csv").write_text("a,y\n1,2\n", encoding="utf-8")
    sets = [f"data.root={tmp_path / 'one.csv'}", f"train.out_dir={tmp_path / 'run'}"]
    result = run_in_project(project, "-m", PKG, "train", *[a for s in sets for a in ("--set", s)])
    assert_one_line_error(result)
    assert not (tmp_path / "run" / "best.pt").exists()


# --- odd input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "needle"),
    [
        ("train.log_every=0", "train.log_every"),
        ("model.dropout=2", "model.dropout"),
        ("train.seed=99999999999999999999", "train.seed"),
        ("task=tabular-regression", "fixed by the template"),
        ("data.root=/data/images", "unknown config key 'data.root'"),
    ],
)
def test_bad_settings_are_one_line(
    project: Path, tmp_path: Path, setting: str, needle: str
) -> None:
    assert_one_line_error(train(project, tmp_path / "run", setting), needle)


def test_a_config_file_that_is_not_utf8_is_named(project: Path, tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_bytes('[train]\nout_dir = "caf\xe9"\n'.encode("latin-1"))
    result = run_in_project(project, "-m", PKG, "train", "--config", str(config))
    assert_one_line_error(result, f"{config}:2", "not UTF-8")


def test_a_config_file_with_a_bom_is_read(project: Path, tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_bytes("\ufeff[train]\nmax_steps = 7\n".encode())  # Notepad's UTF-8
    read = f"from {PKG}.config import load_config; print(load_config({str(config)!r}, []).train"
    read += ".max_steps)"
    result = run_in_project(project, "-c", read)
    assert result.returncode == 0 and result.stdout.strip() == "7", result.stderr


def test_an_out_dir_that_is_a_file_is_named_as_such(project: Path, tmp_path: Path) -> None:
    taken = tmp_path / "notes.txt"
    taken.write_text("mine\n")
    result = train(project, taken)
    assert_one_line_error(result, f"train.out_dir {taken} is a file, not a folder")
    assert taken.read_text() == "mine\n"


def test_a_read_only_out_dir_is_named_as_the_setting(
    project: Path, read_only, tmp_path: Path
) -> None:
    (tmp_path / "mine").mkdir()
    view = read_only(tmp_path / "mine")
    if view == tmp_path / "mine" and os.geteuid() == 0:
        pytest.skip("no read-only mount here, and root writes anyway")
    result = train(project, view / "run")  # was: [Errno 30] Read-only file system: '.../run'
    assert_one_line_error(result, f"cannot write train.out_dir {view / 'run'}")


def test_tilde_in_out_dir_is_the_home_directory(project: Path, tmp_path: Path) -> None:
    env_home = tmp_path / "home"
    env_home.mkdir()
    sets = [*FAST, "train.epochs=1", "train.out_dir=~/runs/a"]
    result = subprocess.run(
        [sys.executable, "-m", PKG, "train", *[a for s in sets for a in ("--set", s)]],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project / "src"), "HOME": str(env_home)},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert (env_home / "runs" / "a" / "last.pt").is_file()
    assert not (project / "~").exists()


def test_evaluate_json_has_no_nan(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert train(project, out, "train.epochs=1").returncode == 0
    script = (
        f"import torch\nfrom {PKG}.checkpoint import load_checkpoint\n"
        f"c = load_checkpoint({str(out / 'last.pt')!r})\n"
        "c['model_state_dict'] = {k: v.float() * float('nan') if v.is_floating_point() else v"
        " for k, v in c['model_state_dict'].items()}\n"
        f"torch.save(c, {str(tmp_path / 'nan.pt')!r})\n"
    )
    assert run_in_project(project, "-c", script).returncode == 0
    result = run_in_project(
        project, "-m", PKG, "evaluate", "--checkpoint", str(tmp_path / "nan.pt"), "--json"
    )
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout.strip().splitlines()[-1])  # strict JSON: no NaN token
    assert values["loss"] is None and "NaN" not in result.stdout


def test_ctrl_c_during_training_is_one_line(project: Path, tmp_path: Path) -> None:
    sets = [*FAST, "data.name=slowsynthetic", f"train.out_dir={tmp_path / 'run'}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", PKG, "train", *[a for s in sets for a in ("--set", s)]],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project / "src")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "run" / "metrics.csv").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)  # the first Ctrl-C stops at the next step (issue 20)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and stderr.strip() == "", stderr
    last = stdout.strip().splitlines()[-1]  # mid-epoch, or between two epochs
    assert last.startswith(
        ("SIGINT: stopped at epoch ", "SIGINT: stopped at the end of epoch ")
    ), stdout
