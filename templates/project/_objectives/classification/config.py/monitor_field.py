    monitor: str = option(
        "accuracy",
        "validation metric that picks best.pt",
        choices=("accuracy", "top5_accuracy", "macro_f1", "loss"),
    )
