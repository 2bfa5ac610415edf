    """Texts (lines of a file, or a CSV/TSV/JSONL column), encoded exactly as in training;
    None for a model trained on the synthetic sequences (they have no text)."""
    if not state:
        return None
    return word_inputs(
        state["vocab"],
        cfg.max_length,
        {{ not variable_length }},
        label_column=state["label_column"],
        text_name=state["text_column"],
    )
