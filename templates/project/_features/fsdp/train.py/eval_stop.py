    # a stop signal cuts an evaluation short; not a sharded one: its ranks gather together
    stop = None if cfg.strategy == "fsdp" else run.signals.pending
