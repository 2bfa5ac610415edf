    if fsdp:
        save_sharded(path, run.model, run.optimizer, state, run.info)
    elif run.info.is_main:
