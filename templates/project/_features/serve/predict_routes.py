

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
