    saved_ema = resume[1] if resume else {}  # the average is built before DDP wraps the model
    ema = WeightAverage(model, config.train, saved_ema) if config.train.ema_decay > 0 else None
