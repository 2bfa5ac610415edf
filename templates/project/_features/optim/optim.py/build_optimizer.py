    if cfg.optimizer != "adamw" or cfg.head_lr_multiplier != 1.0:
        return other_optimizer(model, cfg, fused)
