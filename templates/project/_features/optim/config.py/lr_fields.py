    head_lr_multiplier: float = option(
        1.0, "the head's (last top-level module's) learning rate as a multiple of lr", low=0.0
    )
