        "pad": {"index": tokenizer.pad_token_id, "to": "the longest text of the batch"},
