"""ptgen: generate PyTorch projects that already train, keep them current, lint PyTorch code."""

__version__ = "0.6.2"
