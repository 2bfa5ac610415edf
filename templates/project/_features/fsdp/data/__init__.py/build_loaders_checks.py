    if config.train.strategy == "fsdp" and len(bundle.val) < info.world_size:
        raise ConfigError(  # every rank must evaluate at least one batch (sharding.py)
            f"train.strategy=fsdp: the validation split has {len(bundle.val)} samples, "
            f"fewer than the {info.world_size} processes"
        )
