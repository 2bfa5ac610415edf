    # a sharded checkpoint, or any into a sharded model: DCP's loaders set the optimizer too
    from .sharding import is_sharded

    optimizer_too = Path(path).is_dir() or is_sharded(unwrap(model))
    load_model_state(model, checkpoint, path, config, optimizer if optimizer_too else None)
    try:
        if not optimizer_too:
            optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
