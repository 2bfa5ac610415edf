    if not cfg.root:
        return DataBundle(*make_splits(cfg, seed))
    train_split, kept, val_split, held, test_split = load_splits(cfg)
    if state is None:
        label = label_of(train_split, cfg)
        image = cfg.image_column or next(
            (name for name, kind in train_split.features.items() if type(kind).__name__ == "Image"), ""
        )
        if not image:
            columns = ", ".join(train_split.features)
            raise ConfigError(f"no Image column; set data.image_column to one of: {columns}")
        state = {"image_column": image, "label_column": label, "classes": classes_of(train_split, label, kept)}
    if cfg.streaming:
        return streams(cfg, seed, state, [train_split, val_split, test_split])
    column, label, classes = state["image_column"], state["label_column"], state["classes"]
    train = usable_rows(train_split, kept, cfg, column)
    val = usable_rows(val_split, held, cfg, column)
    # One cache for both splits: filled here or by the training sampler's first set_epoch.
    cache = image_cache(cfg, "trainval", column, [(train_split, train), (val_split, val)])
    if "mean" not in state:  # decoded once: the statistics read the filled cache
        cache.fill()
        state["mean"], state["std"] = cache.channel_stats(len(train))
    mean, std = state["mean"], state["std"]
    spec = DataSpec(num_outputs=len(classes), in_channels=3, image_size=cfg.image_size)

    def load_test() -> Images:
        rows = usable_rows(test_split, None, cfg, column)
        cache = image_cache(cfg, "test", column, [(test_split, rows)])
        cache.fill()  # only `evaluate --split test` asks: now, before its loader starts
        return Images(cache, class_targets(test_split, label, rows, classes), mean, std)

    train_targets = class_targets(train_split, label, train, classes)  # (N,)
    return DataBundle(
        Images(cache, train_targets, mean, std, cfg.augment, cfg.augment_flip, seed),
        Images(cache, class_targets(val_split, label, val, classes), mean, std, offset=len(train)),
        spec,
        state=state,
        load_test=load_test if test_split is not None else None,
    )
