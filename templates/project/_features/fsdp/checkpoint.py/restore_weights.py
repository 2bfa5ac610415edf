    # a sharded checkpoint, or any into a sharded model: DCP's loaders set the optimizer too
    optimizer_too = FORMATS[".dcp"].owns(path, unwrap(model))
    load_model_state(model, checkpoint, path, config, optimizer if optimizer_too else None)
    try:
        if not optimizer_too:
            optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
