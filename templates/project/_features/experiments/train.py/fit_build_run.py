            run = build_run(config, info, device, fold)
