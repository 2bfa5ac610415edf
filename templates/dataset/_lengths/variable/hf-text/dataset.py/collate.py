    collate = functools.partial(pad_collate, pad_index=tokenizer.pad_token_id)
