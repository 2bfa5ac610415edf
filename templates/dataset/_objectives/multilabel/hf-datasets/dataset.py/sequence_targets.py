        targets = label_sets(split, state["label_column"], rows, state["classes"])  # (N, K)
