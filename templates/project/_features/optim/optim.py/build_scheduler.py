    if cfg.scheduler == "onecycle":
        return OneCycle(optimizer, cfg, total)
    if cfg.scheduler in ("step", "plateau"):
        step_every = max(steps_per_epoch, 1) * cfg.lr_step_epochs
        factor = LrDrop(cfg.scheduler, cfg.warmup_steps, total, step_every, cfg.lr_gamma)
        return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
