def label_sets(task: Task, outputs: torch.Tensor) -> Iterator[dict[str, Any]]:
    """Per input: the labels predicted (each at its saved threshold; possibly none) and the
    probability of every label."""
    chosen = task.decide(outputs).tolist()  # (B, L) bool
    for probabilities, picks in zip(outputs.sigmoid().tolist(), chosen, strict=True):
        yield {
            "labels": [name for name, pick in zip(task.class_names, picks, strict=True) if pick],
            "probabilities": dict(zip(task.class_names, probabilities, strict=True)),
        }
