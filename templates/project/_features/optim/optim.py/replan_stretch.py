    if isinstance(factor, LrDrop):
        factor.step_every = max(steps_per_epoch, 1) * cfg.lr_step_epochs
