    root, sets = Path(cfg.root).expanduser(), read_labels(cfg)
    seen = {name for path in train_by_class[""] for name in sets.get(path.relative_to(root).as_posix(), [])}
    classes = list(state["classes"]) if state else sorted(seen)
    if not classes:
        raise ConfigError(f"data.labels_file gives the training images of {root} no labels at all")
    train_files = labelled(train_by_class, sets, classes, root, "train")
    val_files = labelled(val_by_class, sets, classes, root, "val")
