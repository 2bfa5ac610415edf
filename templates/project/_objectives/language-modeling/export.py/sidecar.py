        "tokenizer": tokenizer_of(inference.state),  # text -> the input's ids -> text
