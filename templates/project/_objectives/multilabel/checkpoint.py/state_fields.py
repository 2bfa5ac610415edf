    thresholds: list[float] | None = None  # per label, tuned on the last evaluation
