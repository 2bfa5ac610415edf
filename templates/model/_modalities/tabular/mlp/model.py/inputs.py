        x = inputs  # (B, F)
