{% include "_features/serve/predict_routes.py" %}

OUTPUTS = "per input: the predicted value (or values) in the target's own units"


def results(inference: Inference, outputs: torch.Tensor) -> list[dict[str, Any]]:
    """Per input: what `predict` writes."""
    return list(values(inference.task, outputs))
