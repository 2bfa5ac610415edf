    monitor: str = option(
        "micro_f1",
        "validation metric that picks best.pt",
        choices=("micro_f1", "macro_f1", "map", "loss"),
    )
