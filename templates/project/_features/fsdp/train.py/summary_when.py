    # the model table (train.summary_depth); not for a sharded model, whose forward needs every rank
    if run.config.train.strategy != "fsdp" and run.config.train.summary_depth:
