    optimizer: torch.optim.Optimizer | None = None,
