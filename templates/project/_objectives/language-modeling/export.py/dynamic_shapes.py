def dynamic_shapes(batch: Batch) -> dict[str, dict[int, torch.export.Dim]]:
    """Dimension 0 of every input is the batch; dimension 1 of the tokens is their number,
    at most the traced batch's (a whole block: the model has no positions beyond it)."""
    size = torch.export.Dim("batch", min=1)
    length = torch.export.Dim("length", min=1, max=batch["inputs"].shape[1])
    return {"inputs": {0: size, 1: length}}
