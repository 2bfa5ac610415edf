    kind = check_column(train_split, target, "data.label_column")
    if not str(getattr(kind, "dtype", "")).startswith(NUMBER_TYPES):
        raise ConfigError(f"data.label_column {target!r} holds {kind} values, not numbers")
