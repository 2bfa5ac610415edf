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
    train_pixels, train_targets = images(train_split, kept, cfg, state)
    val_pixels, val_targets = images(val_split, held, cfg, state)
    if "mean" not in state:
        every = max(len(train_pixels) // MAX_STATS_IMAGES, 1)  # as image-folder samples them
        state["mean"], state["std"] = channel_stats(train_pixels[::every])
    mean, std = state["mean"], state["std"]
    spec = DataSpec(num_outputs=len(state["classes"]), in_channels=3, image_size=cfg.image_size)

    def load_test() -> Images:
        return Images(*images(test_split, None, cfg, state), mean, std)

    return DataBundle(
        Images(train_pixels, train_targets, mean, std, cfg.augment, cfg.augment_flip, seed),
        Images(val_pixels, val_targets, mean, std),  # evaluation never augments
        spec,
        state=state,
        load_test=load_test if test_split is not None else None,
    )
