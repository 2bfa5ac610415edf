    init_weights(model, config.model, resume[0] if resume else None, info.is_main)
    freeze(model, config.model.freeze)  # before the optimizer, which leaves frozen ones out
