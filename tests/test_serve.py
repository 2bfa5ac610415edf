"""Issue 52, part 1: the `serve` feature, proven on real projects trained on real files.

One project per task (module fixture, a few training steps), served by the real server
(`python -m PKG serve`, uvicorn) on 127.0.0.1 at a free port and called with a real HTTP
client (httpx): /predict gives `predict`'s records for the same inputs (/generate gives
`generate`'s text), every bad input gets a 4xx naming its field while the server goes on,
SIGTERM with requests in flight answers them all and exits 0, and the default bind is
127.0.0.1.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

import httpx
import numpy as np
import pytest
from helpers import run_in_project
from PIL import Image
from test_component_kinds import write_images, write_table, write_text
from test_multilabel import write_images as write_label_sets
from test_segmentation import write_masks

from ptgen.project import ProjectOptions, new_project

pytestmark = pytest.mark.slow

PKG = "served"
CASES = {  # task: (dataset kind, model kind)
    "image-classification": ("image-folder", "cnn"),
    "tabular-regression": ("csv", "mlp"),
    "sequence-classification": ("text", "rnn"),
    "language-modeling": ("synthetic", "gpt"),
    "multilabel-classification": ("image-folder", "cnn"),
    "segmentation": ("image-masks", "unet"),
}
SETTINGS = {  # task: what its training needs beyond data.root (small images: quick steps)
    "multilabel-classification": ["data.image_size=12", "train.batch_size=8"],
    "segmentation": [
        "data.num_classes=3",
        "data.image_size=16",
        "model.width=8",
        "train.batch_size=8",
    ],
}
IMAGES = {"image-classification", "multilabel-classification", "segmentation"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Server:
    process: subprocess.Popen
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)


def start_server(project: Path, checkpoint: Path, *options: str) -> Server:
    """`python -m PKG serve` in its own process, once /ready answers 200."""
    port = free_port()
    log = project / f"serve-{port}.log"
    env = dict(os.environ, PYTHONPATH=str(project / "src"), OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", PKG, "serve", "--checkpoint", str(checkpoint)]
    with log.open("w") as handle:
        process = subprocess.Popen(
            [*command, "--port", str(port), *options],
            cwd=project,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    server = Server(process, port, log)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(f"{server.url}/ready", timeout=1).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    server.stop()
    raise AssertionError(f"not ready in 90 s: {log.read_text()}")


@dataclass
class Served:
    task: str
    project: Path
    root: Path
    checkpoint: Path
    server: Server

    def post(self, path: str, **kwargs: object) -> httpx.Response:
        return httpx.post(f"{self.server.url}{path}", timeout=60, **kwargs)


def write_data(task: str, root: Path) -> Path:
    if task == "image-classification":
        return write_images(root)
    if task == "multilabel-classification":  # a labels file beside the image folders
        write_label_sets(root, {"train": 24, "val": 8})
        return root
    if task == "segmentation":
        return write_masks(root, {"train": 16, "val": 4})
    root.mkdir()
    if task == "sequence-classification":
        for split, rows in (("train", 60), ("val", 20)):
            write_text(root / f"{split}.tsv", rows)
        return root
    for split, rows in (("train", 60), ("val", 20)):
        write_table(root / f"{split}.csv", rows)
    return root


@pytest.fixture(scope="module", params=list(CASES))
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    task = request.param
    dataset, model = CASES[task]
    where = tmp_path_factory.mktemp(task)
    options = ProjectOptions(PKG, task, model, dataset, features=("serve",))
    project = new_project(options, where, run_smoke=False, init_git=False).path
    settings = ["--set", "train.max_steps=3", "--set", "train.epochs=1"]
    root = where / "data"
    if dataset != "synthetic":
        settings += ["--set", f"data.root={write_data(task, root)}"]
    settings += [arg for setting in SETTINGS.get(task, []) for arg in ("--set", setting)]
    result = run_in_project(project, "-m", PKG, "train", *settings)
    assert result.returncode == 0, result.stderr
    checkpoint = project / "runs" / "default" / "last.pt"
    server = start_server(project, checkpoint)
    yield Served(task, project, root, checkpoint, server)
    assert server.stop() == 0, server.log.read_text()


def predicted(served: Served, *inputs: str) -> list[dict]:
    """`predict`'s records for files, without where each came from (a segmentation's
    masks: written to a folder of their own)."""
    if served.task == "segmentation":
        inputs = (*inputs, "--mask-dir", str(served.root / "masks"), "--force")
    result = run_in_project(
        served.project, "-m", PKG, "predict", "--checkpoint", str(served.checkpoint), *inputs
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    return [{k: v for k, v in r.items() if k not in ("input", "row")} for r in records]


def request_of(served: Served) -> tuple[dict, list[dict]]:
    """A JSON request of a few inputs, and `predict`'s records for the same inputs."""
    if served.task in IMAGES:
        files = sorted((served.root / "val").rglob("*.[jp][pn]g"))
        files = [f for f in files if "masks" not in f.parts][:5]  # a segmentation's images
        inputs = [base64.b64encode(f.read_bytes()).decode() for f in files]
        return {"inputs": inputs}, predicted(served, *map(str, files))
    if served.task == "sequence-classification":
        texts = ["This film was great, truly!", "awful and poor", "fine"]
        path = served.root / "asked.txt"
        path.write_text("\n".join(texts) + "\n", encoding="utf-8")
        return {"inputs": texts}, predicted(served, str(path))
    path = served.root / "val.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","), strict=True)) for line in lines[1:6]]
    asked = [{k: number_or_text(v) for k, v in row.items()} for row in rows]
    return {"inputs": asked}, predicted(served, str(path))[:5]


def same(value: object) -> object:
    """`value` with every number compared within 1e-5 (a batch of other inputs may sum in
    another order); labels, keys and structure exactly."""
    if isinstance(value, dict):
        return {k: same(v) for k, v in value.items()}
    if isinstance(value, list):
        return [same(v) for v in value]
    if isinstance(value, float):
        return pytest.approx(value, rel=1e-5, abs=1e-6)
    return value


def mask_pixels(records: list[dict], key: str) -> list[dict]:
    """Segmentation records with the mask under `key` (a file's path, or a PNG as base64)
    read as its mode, palette and pixels."""
    decoded = []
    for record in records:
        source = record[key]
        if key == "mask_png":
            source = BytesIO(base64.b64decode(source, validate=True))
        with Image.open(source) as mask:
            pixels = (mask.mode, mask.getpalette(), np.asarray(mask).tolist())
        decoded.append({**{k: v for k, v in record.items() if k != key}, "mask": pixels})
    return decoded


def number_or_text(cell: str) -> float | str | None:
    """A CSV cell as JSON would carry it: a number, a text, or null when empty."""
    try:
        return float(cell)
    except ValueError:
        return cell or None


def test_outputs_are_predicts_for_the_same_inputs(served: Served) -> None:
    about = httpx.get(f"{served.server.url}/metadata").json()
    assert about["task"] == served.task and about["provenance"]["command"].startswith("python")
    assert about["model_card"] is None  # last.pt is served: MODEL_CARD.md is best.pt's
    assert httpx.get(f"{served.server.url}/health").json() == {"status": "ok"}
    assert httpx.get(f"{served.server.url}/openapi.json").status_code == 200
    if served.task == "language-modeling":  # serve needs predict's files, but not here
        assert not (served.project / "src" / PKG / "predict.py").exists()
        asked = {"prompt": "The quick", "max_new_tokens": 12, "seed": 3, "top_k": 5}
        text = served.post("/generate", json=asked).json()["text"]
        cli = run_in_project(
            served.project, "-m", PKG, "generate", "--checkpoint", str(served.checkpoint),
            "The quick", "--max-new-tokens", "12", "--seed", "3", "--top-k", "5",
        )  # fmt: skip
        assert cli.returncode == 0, cli.stderr
        assert cli.stdout == f"The quick{text}\n"
        streamed = served.post("/generate", json={**asked, "stream": True})
        assert streamed.status_code == 200 and streamed.text == text
        return
    body, expected = request_of(served)
    response = served.post("/predict", json=body)
    assert response.status_code == 200, response.text
    outputs = response.json()["outputs"]
    if served.task == "segmentation":  # served: the PNG itself; predict: the file it wrote
        outputs, expected = mask_pixels(outputs, "mask_png"), mask_pixels(expected, "mask")
    assert len(outputs) == len(body["inputs"])
    assert outputs == same(expected)
    if served.task == "image-classification":  # the same images as multipart files
        files = [("file", base64.b64decode(image)) for image in body["inputs"]]
        assert served.post("/predict", files=files).json()["outputs"] == same(expected)
        too_many = served.post("/predict", files=files * 13)  # 65 files, --max-inputs 64
        assert (too_many.status_code, too_many.json()["field"]) == (413, "inputs")


BAD = {  # task: [(request, status, field)]
    "image-classification": [
        ({"inputs": ["bm90IGFuIGltYWdl"]}, 422, "inputs[0]"),  # base64 of "not an image"
        ({"inputs": ["%%%"]}, 422, "inputs[0]"),
        ({"inputs": [7]}, 422, "inputs[0]"),
    ],
    "tabular-regression": [
        ({"inputs": [{"a": 1, "b": 2, "colour": "red"}]}, 422, "inputs[0].c"),
        ({"inputs": [{"a": [1], "b": 2, "c": 3, "colour": "red"}]}, 422, "inputs[0].a"),
        ({"inputs": [{"a": "many", "b": 2, "c": 3, "colour": "red"}]}, 422, "inputs[0]"),
        ({"inputs": ["a row"]}, 422, "inputs[0]"),
    ],
    "sequence-classification": [({"inputs": [{"text": 1}]}, 422, "inputs[0]")],
    "multilabel-classification": [({"inputs": ["bm90IGFuIGltYWdl"]}, 422, "inputs[0]")],
    "segmentation": [({"inputs": ["%%%"]}, 422, "inputs[0]")],
    "language-modeling": [
        ({"max_new_tokens": 10**6}, 422, "max_new_tokens"),
        ({"prompt": 3}, 422, "prompt"),
        ({"temperature": -1}, 422, "temperature"),
    ],
}


def test_bad_input_is_a_4xx_naming_the_field_and_the_server_goes_on(served: Served) -> None:
    route = "/generate" if served.task == "language-modeling" else "/predict"
    cases = [(body, status, field) for body, status, field in BAD[served.task]]
    if route == "/predict":
        cases += [
            ({"inputs": []}, 422, "inputs"),
            ({"inputs": ["x"] * 65}, 413, "inputs"),  # --max-inputs 64
            ({"wrong": []}, 422, "inputs"),
        ]
    for body, status, field in cases:
        response = served.post(route, json=body)
        assert (response.status_code, response.json()["field"]) == (status, field), body
        assert response.json()["error"]
    broken = served.post(route, content=b"{not json", headers={"content-type": "application/json"})
    assert (broken.status_code, broken.json()["field"]) == (400, "body")
    huge = served.post(route, content=b"x" * (8 * 2**20 + 1))
    assert (huge.status_code, huge.json()["field"]) == (413, "body")
    assert httpx.get(f"{served.server.url}/ready").status_code == 200  # still serving


def test_sigterm_drains_the_requests_in_flight_and_exits_0(served: Served) -> None:
    if served.task != "tabular-regression":
        pytest.skip("one task proves the drain (a server start costs seconds)")
    # one batch gathered for 1.5 s: every request is still waiting for it at SIGTERM
    options = ("--max-wait-ms", "1500", "--max-batch-size", "128")
    server = start_server(served.project, served.checkpoint.with_name("best.pt"), *options)
    card = httpx.get(f"{server.url}/metadata").json()["model_card"]  # best.pt's: served with it
    assert card.startswith("---\nlibrary_name: pytorch") and "## Metrics" in card
    body, _ = request_of(served)
    with ThreadPoolExecutor(16) as pool:
        url = f"{server.url}/predict"
        futures = [pool.submit(httpx.post, url, json=body, timeout=60) for _ in range(16)]
        time.sleep(0.7)  # all connected and queued, none answered
        server.process.send_signal(signal.SIGTERM)
        answers = [future.result() for future in futures]
    assert [a.status_code for a in answers] == [200] * 16
    assert all(len(a.json()["outputs"]) == len(body["inputs"]) for a in answers)
    assert server.process.wait(timeout=60) == 0, server.log.read_text()


def test_the_default_bind_is_loopback_only(served: Served) -> None:
    if served.task != "tabular-regression":
        pytest.skip("the bind is the same code for every task")
    assert (
        f"Uvicorn running on http://127.0.0.1:{served.server.port}" in served.server.log.read_text()
    )
    pid = served.server.process.pid
    inodes = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    listening = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and f"socket:[{fields[9]}]" in inodes:  # LISTEN, this process's
            listening.append(fields[1])
    assert listening == [f"0100007F:{served.server.port:04X}"]  # 127.0.0.1 only
