    """Per-step losses kept on the device, read back once per log (no per-step sync), and
    the host time spent waiting for batches; the clock pauses between epochs (evaluation and
    checkpoints are not training time); `waited` and `elapsed` are the run's totals."""
