    use_ema = run.ema is not None and cfg.ema_eval
    scored = run.ema.model if use_ema else unwrap(run.train_model)  # what evaluation scores
