    """All but the model and optimizer, and what rebuilds the model alone (sharded: state.pt)."""
