    class_weights: str = option(
        "none", "weigh the loss by inverse class frequency (auto)", choices=("none", "auto")
    )
