    if run.info.is_main and not stopped_by:  # a stopped run ends with how to continue it
        advise_on_data(monitor.data_wait_share(), state.step, run.train_loader, cfg.batch_size)
