def dynamic_shapes(batch: Batch) -> dict[str, dict[int, torch.export.Dim]]:
    """Dimension 0 of every input is the batch; dimensions 2 and 3 of the image are its height and
    width."""
    size = torch.export.Dim("batch", min=1)
    height = torch.export.Dim("height", min=MIN_SIDE)
    width = torch.export.Dim("width", min=MIN_SIDE)
    return {name: {0: size, 2: height, 3: width} for name in batch}
