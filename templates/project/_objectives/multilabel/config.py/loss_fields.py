    pos_weight: str = option(
        "none",
        "weigh each label's positives by its negatives / positives (auto)",
        choices=("none", "auto"),
    )
