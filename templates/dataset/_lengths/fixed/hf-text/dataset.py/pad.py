        "pad": {"index": tokenizer.pad_token_id, "to": cfg.max_length},
