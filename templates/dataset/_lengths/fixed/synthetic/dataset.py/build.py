    return fixed_length(*make_splits(cfg, seed), length=cfg.max_length)
