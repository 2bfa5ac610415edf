    separator = settings.label_separator
    if state is None:
        vocab = build_vocab(encoder.counts, settings.vocab_size)
        names = {name for cell in encoder.train_labels for name in label_names(cell, separator)}
        if not names:
            raise ConfigError(
                f"the label column of {files['train']} gives the training rows no labels at all "
                f"(labels are joined by data.label_separator {separator!r})"
            )
        state = {"vocab": vocab, "classes": sorted(names)}  # the label names
    sizes = {name: len(lengths) for name, (lengths, _) in encoder.rows.items()}
    for split, (name, rows) in split_rows(files, sizes, settings.val_fraction).items():
        cells = encoder.labels_of(name, rows)
        found = {label for cell in cells for label in label_names(cell, separator)}
        unknown = sorted(found - set(state["classes"]))
        if unknown:
            note(f"{split} split: labels not seen in training are ignored: {', '.join(unknown)}")
    encoder.finish(state["vocab"], state["classes"], separator)
