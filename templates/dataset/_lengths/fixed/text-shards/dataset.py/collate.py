    collate = functools.partial(pad_collate, length=cfg.max_length)
