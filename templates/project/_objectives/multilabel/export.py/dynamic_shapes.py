{%- if modality == "sequence" -%}
def dynamic_shapes(batch: Batch) -> dict[str, dict[int, torch.export.Dim]]:
    """Dimension 0 of every input is the batch; dimension 1 of the tokens and the mask is the
    sequence length."""
    size = torch.export.Dim("batch", min=1)
    length = torch.export.Dim("length", min=1)
    return {name: {0: size, 1: length} if x.dim() > 1 else {0: size} for name, x in batch.items()}
{%- else -%}
def dynamic_shapes(batch: Batch) -> dict[str, dict[int, torch.export.Dim]]:
    """Dimension 0 of every input is the batch."""
    size = torch.export.Dim("batch", min=1)
    return {name: {0: size} for name in batch}
{%- endif %}
