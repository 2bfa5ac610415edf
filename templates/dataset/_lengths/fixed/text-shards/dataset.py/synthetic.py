        return fixed_length(train, val, spec, cfg.max_length)
