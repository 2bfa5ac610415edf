    labels: np.ndarray  # (rows, L) float32 multi-hot label sets
