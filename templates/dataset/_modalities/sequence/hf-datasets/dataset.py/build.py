{%- from "_lib/parts.jinja" import objective_part with context %}
    if not cfg.root:
        train, val, spec = make_splits(cfg, seed)
        return batching(train, val, spec, cfg, {})
    train_split, kept, val_split, held, test_split = load_splits(cfg)
    if state is None:
        label = label_of(train_split, cfg)
        text = text_of(train_split, label, cfg)
        counts: Counter[str] = Counter()
        for cell in column(train_split, text, kept).to_pylist() if not cfg.tokenizer else []:
            counts.update(tokenize(cell or ""))
{%- set classes %}
        classes = classes_of(train_split, label, kept)
{%- endset %}
{{- objective_part("dataset/hf-datasets/dataset.py", "sequence_classes") or classes }}
        state = {"text_column": text, "label_column": label, "classes": classes}
        if cfg.tokenizer:
            state["tokenizer"] = cfg.tokenizer
        else:
            state["vocab"] = build_vocab(counts, cfg.vocab_size)
    tokenizer = load_tokenizer(state["tokenizer"]) if "tokenizer" in state else None
    index = {token: i for i, token in enumerate(state.get("vocab", []))}
    vocab_size = len(tokenizer) if tokenizer is not None else len(state["vocab"])
    spec = DataSpec(num_outputs=len(state["classes"]), vocab_size=vocab_size)
    if cfg.streaming:
        return streams(cfg, seed, state, spec, [train_split, val_split, test_split], tokenizer)

    def encoded(split: Any, rows: torch.Tensor | None) -> TensorDictDataset:
        check_column(split, state["text_column"], "data.text_column")
        texts = column(split, state["text_column"], rows).to_pylist()
        inputs = [encode_text(text or "", index, tokenizer, cfg.max_length) for text in texts]
{%- set targets %}
        targets = class_targets(split, state["label_column"], rows, state["classes"])  # (N,)
{%- endset %}
{{- objective_part("dataset/hf-datasets/dataset.py", "sequence_targets") or targets }}
        return TensorDictDataset(inputs, targets)

    train, val = encoded(train_split, kept), encoded(val_split, held)

    def load_test() -> TensorDictDataset:
        return encoded(test_split, None)

    test = load_test if test_split is not None else None
    pad_index = PAD_INDEX if tokenizer is None else tokenizer.pad_token_id
    return batching(train, val, spec, cfg, state, test, pad_index)
