    """DDP first, then torch.compile (the order the PyTorch docs recommend). Under
    train.strategy=fsdp the model is sharded already (build_run)."""
    if info.enabled and config.train.strategy != "fsdp":
