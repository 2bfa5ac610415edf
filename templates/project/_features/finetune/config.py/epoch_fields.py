    freeze_epochs: int = option(
        0, "train only the head for the first N epochs, then everything (model.freeze stays)", low=0
    )
