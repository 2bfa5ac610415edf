    if config.train.strategy == "fsdp" and config.train.ema_decay > 0:  # it is not sharded
        raise ConfigError(
            "the ema feature's average does not support train.strategy=fsdp: use ddp, or train "
            "without it: --set train.ema_decay=0"
        )
