    settings = TokenSettings(cfg.target, cfg.max_length, cfg.vocab_size, cfg.val_fraction, cfg.cache_dir)
