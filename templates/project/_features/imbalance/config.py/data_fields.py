    balanced_sampler: bool = option(
        False, "draw training samples with replacement, each class equally often"
    )
