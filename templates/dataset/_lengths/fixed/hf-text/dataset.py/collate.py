    collate = functools.partial(pad_collate, length=cfg.max_length, pad_index=tokenizer.pad_token_id)
