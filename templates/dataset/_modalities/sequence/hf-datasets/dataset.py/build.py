{%- from "_lib/parts.jinja" import objective_part with context %}
    if not cfg.root:
        train, val, spec = make_splits(cfg, seed)
        return batching(train, val, spec, cfg, {})
    train_split, kept, val_split, held, test_split = load_splits(cfg)
    if state is None:
        label = label_of(train_split, cfg)
        text = text_of(train_split, label, cfg)
        counts: Counter[str] = Counter()
        for cell in column(train_split, text, kept).to_pylist():
            counts.update(tokenize(cell or ""))
{%- set classes %}
        classes = classes_of(train_split, label, kept)
{%- endset %}
{{- objective_part("dataset/hf-datasets/dataset.py", "sequence_classes") or classes }}
        vocab = build_vocab(counts, cfg.vocab_size)
        state = {"text_column": text, "label_column": label, "classes": classes, "vocab": vocab}
    spec = DataSpec(num_outputs=len(state["classes"]), vocab_size=len(state["vocab"]))
    if cfg.streaming:
        return streams(cfg, seed, state, spec, [train_split, val_split, test_split])
    index = {token: i for i, token in enumerate(state["vocab"])}

    def encoded(split: Any, rows: torch.Tensor | None) -> TensorDictDataset:
        check_column(split, state["text_column"], "data.text_column")
        texts = column(split, state["text_column"], rows).to_pylist()
        inputs = [encode(text or "", index, cfg.max_length) for text in texts]  # (T_i,) each
{%- set targets %}
        targets = class_targets(split, state["label_column"], rows, state["classes"])  # (N,)
{%- endset %}
{{- objective_part("dataset/hf-datasets/dataset.py", "sequence_targets") or targets }}
        return TensorDictDataset(inputs, targets)

    train, val = encoded(train_split, kept), encoded(val_split, held)

    def load_test() -> TensorDictDataset:
        return encoded(test_split, None)

    return batching(train, val, spec, cfg, state, load_test if test_split is not None else None)
