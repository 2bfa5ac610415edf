{% include "_features/serve/predict_routes.py" %}

OUTPUTS = "per input: the most likely class (label, probability) and the top 5 classes"


def results(inference: Inference, outputs: torch.Tensor) -> list[dict[str, Any]]:
    """Per input: what `predict` writes with its default --top-k."""
    return list(ranked(inference.task, outputs, min(5, inference.task.num_classes)))
