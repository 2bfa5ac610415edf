    """Texts (lines of a file, or a CSV/TSV/JSONL column), encoded exactly as in training;
    None for a model trained on the synthetic sequences (they have no text)."""
    if not state:
        return None
    read = word_inputs(
        state.get("vocab", []),
        cfg.max_length,
        {{ not variable_length }},
        label_column=state["label_column"],
        text_name=state["text_column"],
    )
    if "tokenizer" not in state:
        return read
    tokenizer = load_tokenizer(state["tokenizer"])

    def prepare(text: str) -> dict[str, torch.Tensor]:
        return {"inputs": encode_text(text, {}, tokenizer, cfg.max_length)}  # (T,)

    steps = {
        "tokenizer": state["tokenizer"],  # AutoTokenizer.from_pretrained(this)
        "max_length": cfg.max_length,  # truncation=True, with the special tokens
        "pad_index": tokenizer.pad_token_id,
        "padding_mask": "True where padded",
    }
    collate = functools.partial(read.collate_fn, pad_index=tokenizer.pad_token_id)
    return dataclasses.replace(read, prepare=prepare, preprocessing=steps, collate_fn=collate)
