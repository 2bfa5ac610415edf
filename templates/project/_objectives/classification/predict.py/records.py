def ranked(task: Task, outputs: torch.Tensor, top_k: int) -> Iterator[dict[str, Any]]:
    """Per input: the most likely class, its probability, and the `top_k` classes."""
    top = outputs.softmax(dim=1).topk(top_k, dim=1)  # (B, k) values and indices
    for probabilities, indices in zip(top.values.tolist(), top.indices.tolist(), strict=True):
        classes = [
            {"label": task.class_names[i], "probability": p}
            for p, i in zip(probabilities, indices, strict=True)
        ]
        yield {**classes[0], "top_k": classes}
