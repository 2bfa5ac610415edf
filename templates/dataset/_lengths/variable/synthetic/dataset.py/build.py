    return variable_length(*make_splits(cfg, seed), bucket=cfg.bucket_by_length)
