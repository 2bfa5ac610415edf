{% include "_features/serve/predict_routes.py" %}

OUTPUTS = "per input: the labels predicted at their saved thresholds, and every label's probability"


def results(inference: Inference, outputs: torch.Tensor) -> list[dict[str, Any]]:
    """Per input: what `predict` writes."""
    return list(label_sets(inference.task, outputs))
