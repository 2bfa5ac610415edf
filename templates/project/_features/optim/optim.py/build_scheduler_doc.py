    """A LambdaLR of `LrFactor`, or of `LrDrop` (step, plateau), or onecycle."""
