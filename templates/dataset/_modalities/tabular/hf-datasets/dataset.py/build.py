{%- from "_lib/parts.jinja" import objective_part with context %}
    if not cfg.root:
        return DataBundle(*make_splits(cfg, seed))
    train_split, kept, val_split, held, test_split = load_splits(cfg)
    target = state["target"] if state else label_of(train_split, cfg)
{{- objective_part("dataset/hf-datasets/dataset.py", "check_target") }}
    for name in cfg.ignore:
        check_column(train_split, name, "data.ignore")
    train = labelled(as_table(train_split, kept), target)
    val = labelled(as_table(val_split, held), target)
    if state is None:
        schema = fit_schema(train, target, cfg)
        state = {**schema, **fit_target(train, target), "features": feature_names(schema)}
{{- objective_part("dataset/hf-datasets/dataset.py", "class_names") }}
{{- objective_part("dataset/csv/dataset.py", "spec") }}
    if cfg.streaming:
        return streams(cfg, seed, state, spec, [train_split, val_split, test_split])

    def load_test() -> TensorDictDataset:
        test = labelled(as_table(test_split, None), target)
        return TensorDictDataset(encode_features(test, state), encode_targets(test, target, state))

    inputs = encode_splits([train, val], state)  # (N, F) each
    targets = [encode_targets(table, target, state) for table in (train, val)]
    splits = [TensorDictDataset(x, y) for x, y in zip(inputs, targets, strict=True)]
    return DataBundle(*splits, spec, state=state, load_test=load_test if test_split is not None else None)
