def values(task: Task, outputs: torch.Tensor) -> Iterator[dict[str, Any]]:
    """Per input: the predicted value (or values) in the target's own units."""
    for row in task.to_units(outputs).tolist():
        yield {"value": row[0]} if len(row) == 1 else {"values": row}
