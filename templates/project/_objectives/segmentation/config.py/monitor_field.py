    monitor: str = option(
        "miou",
        "validation metric that picks best.pt",
        choices=("miou", "pixel_accuracy", "loss"),
    )
