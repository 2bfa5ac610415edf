    head_lr_multiplier: float = option(
        {{ train_defaults.head_lr_multiplier | default(1.0) }}, "the head's (last top-level module's) learning rate as a multiple of lr", low=0.0
    )
