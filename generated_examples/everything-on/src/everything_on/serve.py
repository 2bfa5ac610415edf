"""`python -m <package> serve`: the trained model behind HTTP, from the checkpoint alone.

FastAPI on uvicorn: the standard ASGI stack of the Python ecosystem, with pydantic models
and an OpenAPI page (`/docs`) for free. Routes: GET /health (the process is up),
GET /ready (the model is loaded and has run one warm-up batch), GET /metadata (what the model
is: task, outputs, kind, the checkpoint's provenance and its MODEL_CARD.md).
POST /predict answers with the records `predict` writes, one per input, in order. Inputs come
as JSON `{"inputs": [...]}` or, for files, as a multipart form.

Dynamic batching: each input of a request goes into one asyncio queue; a worker takes what
is queued, waits at most --max-wait-ms for up to --max-batch-size inputs (unless the last
batch held a single input: a lone caller does not wait for company), runs one forward pass
for them in a thread (the event loop keeps answering meanwhile) and hands each result back
to its request. A bad input is a 4xx whose JSON body names the field (`error`, `field`);
the server goes on. SIGTERM stops taking connections, finishes the requests in flight (the
worker empties its queue), then exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

import torch
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from torch.utils.data import default_collate

from .config import ConfigError, component
from .data._inputs import RawInputs
from .data._synthetic import example_batch
from .evaluate import Inference, load_inference
from .predict import forward, ranked

DRAIN_SECONDS = 30  # SIGTERM: the longest wait for the requests in flight


@dataclass(frozen=True)
class Limits:
    """serve's options: the batches and what one request may hold."""

    max_batch_size: int
    max_wait_s: float
    max_body_bytes: int
    max_inputs: int


DEFAULT_LIMITS = Limits(32, 0.005, 8 * 2**20, 64)  # as `serve`'s options default


class BadInput(Exception):
    """A request the server cannot use: answered with `status` and the field it names."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(message)
        self.status, self.field, self.message = status, field, message


class Batcher:
    """Inputs of concurrent requests run together: up to `max_batch_size` per forward pass,
    gathered for at most `max_wait_s`; `run` (samples -> one result each) runs in a thread."""

    def __init__(
        self, run: Callable[[list[Any]], list[Any]], max_batch_size: int, max_wait_s: float
    ) -> None:
        self.run, self.max_batch_size, self.max_wait_s = run, max_batch_size, max_wait_s
        self.queue: asyncio.Queue[tuple[Any, asyncio.Future[Any]]] = asyncio.Queue()

    async def submit(self, samples: list[Any]) -> list[Any]:
        """The results of `samples`, in order, once their batches have run."""
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in samples]
        for item, future in zip(samples, futures, strict=True):
            self.queue.put_nowait((item, future))
        return list(await asyncio.gather(*futures))

    async def work(self) -> None:
        """Take batches off the queue and run them, until cancelled (after the drain)."""
        loop = asyncio.get_running_loop()
        last_size = 1
        while True:
            batch = [await self.queue.get()]
            # a lone caller (the last batch held one input) does not wait for company
            deadline = loop.time() + (self.max_wait_s if last_size > 1 else 0)
            while len(batch) < self.max_batch_size:
                if self.queue.empty():
                    left = deadline - loop.time()
                    if left <= 0:
                        break
                    with contextlib.suppress(TimeoutError):
                        batch.append(await asyncio.wait_for(self.queue.get(), left))
                    continue
                batch.append(self.queue.get_nowait())
            last_size = len(batch)
            try:
                results = await asyncio.to_thread(self.run, [item for item, _ in batch])
            except Exception as exc:  # the batch fails, the server goes on
                results = [exc] * len(batch)
            for (_, future), result in zip(batch, results, strict=True):
                if future.done():  # its request was cancelled (the client left)
                    continue
                if isinstance(result, Exception):
                    future.set_exception(result)
                else:
                    future.set_result(result)


def serve(args: argparse.Namespace) -> int:
    """Load the checkpoint, then serve until SIGTERM or Ctrl-C; 0 after a clean drain."""
    wait_s = args.max_wait_ms / 1000
    limits = Limits(args.max_batch_size, wait_s, args.max_body_bytes, args.max_inputs)
    for name in ("max_batch_size", "max_body_bytes", "max_inputs"):
        if getattr(limits, name) < 1:
            option = name.replace("_", "-")
            raise ConfigError(f"--{option} must be at least 1; got {getattr(limits, name)}")
    if limits.max_wait_s < 0:
        raise ConfigError(f"--max-wait-ms must be 0 or more; got {args.max_wait_ms}")
    inference = load_inference(args.checkpoint, args.config, args.overrides)
    app = build_app(inference, limits, metadata(inference, Path(args.checkpoint)))
    config = uvicorn.Config(
        app, host=args.host, port=args.port, timeout_graceful_shutdown=DRAIN_SECONDS
    )
    # uvicorn raises the signal it drained on again once done: handled, the exit status is 0
    signal.signal(signal.SIGTERM, lambda *_: None)
    uvicorn.Server(config).run()
    return 0


def metadata(inference: Inference, checkpoint: Path) -> dict[str, Any]:
    """What /metadata says: the task, its outputs, the model, the checkpoint's provenance
    and the model card beside it (None where there is none)."""
    card = checkpoint.with_name("MODEL_CARD.md")  # about best.pt, not another checkpoint
    has_card = checkpoint.name == "best.pt" and card.is_file()
    return {
        "task": inference.config.task,
        "modality": "image",
        "outputs": OUTPUTS,
        "class_names": list(getattr(inference.task, "class_names", ())) or None,
        "model": {
            "name": inference.config.model.name,
            "about": (component("model", inference.config.model.name).__doc__ or "").strip(),
            "parameters": sum(p.numel() for p in inference.model.parameters()),
        },
        "checkpoint": {"file": checkpoint.name, "step": inference.about["step"]},
        "provenance": inference.about["provenance"],
        "model_card": card.read_text(encoding="utf-8") if has_card else None,
    }


def build_app(inference: Inference, limits: Limits, about: dict[str, Any]) -> FastAPI:
    """The routes; the batcher starts (and the model warms up) with the app's lifespan."""
    ready = asyncio.Event()
    batchers: list[Batcher] = []  # the routes' own

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        workers = [asyncio.create_task(batcher.work()) for batcher in batchers]
        await asyncio.to_thread(warm_up, inference)
        ready.set()
        yield
        while any(not batcher.queue.empty() for batcher in batchers):  # drained by uvicorn
            await asyncio.sleep(0.01)
        for worker in workers:
            worker.cancel()

    app = FastAPI(title=f"{__package__} serve", lifespan=lifespan)

    @app.exception_handler(BadInput)
    async def bad_input(_: Request, exc: BadInput) -> JSONResponse:
        return JSONResponse({"error": exc.message, "field": exc.field}, status_code=exc.status)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/ready")
    async def is_ready() -> JSONResponse:
        loaded = ready.is_set()
        return JSONResponse({"ready": loaded}, status_code=200 if loaded else 503)

    @app.get("/metadata")
    async def model_metadata() -> dict[str, Any]:
        return {**about, "limits": vars(limits)}

    batchers.extend(add_routes(app, inference, limits))
    return app


@torch.inference_mode()
def warm_up(inference: Inference) -> None:
    """One forward pass of a random batch: the first request pays no start-up costs."""
    device = inference.precision.device
    batch = {k: v.to(device) for k, v in example_batch(inference.spec, 2).items()}
    with inference.precision.autocast():
        inference.model(**batch)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it is larger than `limit` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BadInput(413, "body", f"the body has {declared} bytes; the limit is {limit}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BadInput(413, "body", f"the body is over the limit of {limit} bytes")
    return bytes(body)


async def request_inputs(request: Request, limits: Limits) -> list[Any]:
    """The request's inputs: JSON `{"inputs": [...]}`, or the files of a multipart form."""
    body = await read_body(request, limits.max_body_bytes)
    kind = request.headers.get("content-type", "")
    if kind.startswith("multipart/form-data"):

        async def replay() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        try:
            # as many files as the body holds: too many is the 413 below, naming `inputs`
            form = await Request(request.scope, replay).form(max_files=limits.max_body_bytes)
        except Exception as exc:  # python-multipart's and Starlette's parse errors
            raise BadInput(400, "body", f"not a multipart form: {exc}") from None
        inputs = [await part.read() for _, part in form.multi_items() if hasattr(part, "read")]
    else:
        try:
            payload = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadInput(400, "body", f"not JSON: {exc}") from None
        if not isinstance(payload, dict) or not isinstance(payload.get("inputs"), list):
            raise BadInput(422, "inputs", 'expected a JSON object {"inputs": [...]}')
        inputs = payload["inputs"]
    if not inputs:
        raise BadInput(422, "inputs", "no inputs")
    if len(inputs) > limits.max_inputs:
        raise BadInput(
            413, "inputs", f"{len(inputs)} inputs; the limit is {limits.max_inputs} a request"
        )
    return inputs


class Upload(BytesIO):
    """An uploaded image's bytes, named in messages by the request field they came from."""

    def __init__(self, data: bytes, field: str) -> None:
        super().__init__(data)
        self.field = field

    def __repr__(self) -> str:
        return self.field


def raw_value(value: Any, field: str, state: dict[str, Any]) -> Upload:
    """An image: a file of a multipart form, or base64 text in JSON."""
    if isinstance(value, str):
        try:
            value = base64.b64decode(value, validate=True)
        except ValueError:
            raise BadInput(422, field, "not base64 text") from None
    if not isinstance(value, bytes):
        raise BadInput(422, field, f"expected an image as base64 text, got {type(value).__name__}")
    return Upload(value, field)


def batch_runner(
    inference: Inference, raw: RawInputs
) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """One forward pass for a batch of prepared samples; the records `predict` writes."""
    collate = raw.collate_fn or default_collate

    def run(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return list(results(inference, forward(inference, collate(samples))))

    return run


def add_routes(app: FastAPI, inference: Inference, limits: Limits) -> list[Batcher]:
    """POST /predict: the records `predict` writes, one per input, in order."""
    hook = getattr(component("data", inference.config.data.name), "raw_inputs", None)
    raw = hook(inference.config.data, inference.state) if hook else None
    if raw is None:
        raise ConfigError(
            f"data {inference.config.data.name!r} cannot read raw inputs: the model was trained "
            "on synthetic data (data.root empty), or its module has no raw_inputs"
        )
    batcher = Batcher(batch_runner(inference, raw), limits.max_batch_size, limits.max_wait_s)

    @app.post("/predict")
    async def predict(request: Request) -> JSONResponse:
        inputs = await request_inputs(request, limits)
        # decoding (an image's, say) in a thread: the event loop goes on reading requests
        samples = await asyncio.to_thread(prepare_all, raw, inference, inputs)
        return JSONResponse({"outputs": await batcher.submit(samples)})  # as is: no re-encoding

    return [batcher]


def prepare_all(raw: RawInputs, inference: Inference, inputs: list[Any]) -> list[dict[str, Any]]:
    """The inputs prepared exactly as `predict` prepares them; a 422 naming the first one
    that cannot be."""
    samples = []
    for i, value in enumerate(inputs):
        field = f"inputs[{i}]"
        try:
            samples.append(raw.prepare(raw_value(value, field, inference.state)))
        except (ValueError, OSError) as exc:
            raise BadInput(422, field, str(exc)) from None
    return samples


OUTPUTS = "per input: the most likely class (label, probability) and the top 5 classes"


def results(inference: Inference, outputs: torch.Tensor) -> list[dict[str, Any]]:
    """Per input: what `predict` writes with its default --top-k."""
    return list(ranked(inference.task, outputs, min(5, inference.task.num_classes)))


def app_from_env() -> FastAPI:
    """The app of the checkpoint named by SERVE_CHECKPOINT, with the default limits: for
    `uvicorn --factory PACKAGE.serve:app_from_env --workers N` and gunicorn's workers."""
    checkpoint = os.environ.get("SERVE_CHECKPOINT", "")
    if not checkpoint:
        raise ConfigError("set SERVE_CHECKPOINT to the checkpoint, e.g. runs/default/best.pt")
    inference = load_inference(checkpoint)
    return build_app(inference, DEFAULT_LIMITS, metadata(inference, Path(checkpoint)))
