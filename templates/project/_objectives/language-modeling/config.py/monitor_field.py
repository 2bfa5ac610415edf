    monitor: str = option(
        "loss",
        "validation metric that picks best.pt",
        choices=("loss", "nats_per_token", "perplexity"),
    )
