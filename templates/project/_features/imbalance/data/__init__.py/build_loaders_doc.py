    `sample_weights`: draw training samples with replacement by these weights (imbalance.py).
