

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
        samples = [prepared(raw, inference, x, f"inputs[{i}]") for i, x in enumerate(inputs)]
        return JSONResponse({"outputs": await batcher.submit(samples)})  # as is: no re-encoding

    return [batcher]


def prepared(raw: RawInputs, inference: Inference, value: Any, field: str) -> dict[str, Any]:
    """One input prepared exactly as `predict` prepares it; a 422 naming it if it cannot be."""
    try:
        return raw.prepare(raw_value(value, field, inference.state))
    except (ValueError, OSError) as exc:
        raise BadInput(422, field, str(exc)) from None
