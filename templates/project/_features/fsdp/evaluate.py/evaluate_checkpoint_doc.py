    """Evaluate a checkpoint (a file or a sharded directory) with its own config (+ overrides)."""
