    """The result for reading: the metrics on one line, a line per class."""
