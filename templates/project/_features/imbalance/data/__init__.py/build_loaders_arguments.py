    sample_weights: torch.Tensor | None = None,
