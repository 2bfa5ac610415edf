    """Load the weights into the plain module under any torch.compile or DDP wrapper; a
    mismatch names the config keys that differ.
    A sharded checkpoint directory loads into a sharded or a plain model, at any number of
    processes, and a file into a sharded model (with `optimizer`: its state too)."""
    sharded = FORMATS[".dcp"]
    try:
        if sharded.owns(path, unwrap(model)):
            sharded.load(unwrap(model), checkpoint, path, optimizer)
        else:
            unwrap(model).load_state_dict(clean_state_dict(checkpoint["model_state_dict"]))
