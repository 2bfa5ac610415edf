    """Variable length: each batch padded to its own longest text (optionally bucketed)."""
    return variable_length(train, val, spec, cfg.bucket_by_length, state, load_test)
