            if cfg.scheduler == "plateau" and stale and stale % cfg.lr_patience == 0:
                lower_lr(run.scheduler)  # lr_patience more evaluations without improvement
