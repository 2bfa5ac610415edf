    """Fixed length: every text padded or cut to data.max_length tokens in the dataset."""
    return fixed_length(train, val, spec, cfg.max_length, state, load_test)
