    data_wait: float  # share of the time spent waiting for the next batch (mean of the ranks)
