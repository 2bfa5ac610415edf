    monitor: str = option(
        "mae", "validation metric that picks best.pt", choices=("mae", "rmse", "r2", "loss")
    )
