    if config.train.strategy == "fsdp" and info.enabled:
        # block by block onto the device, so no device ever holds the whole model; before
        # the optimizer is built, as sharding replaces the parameters
        shard_model(model, amp, device)
