    """A record as flat CSV cells: the top-k become label_2, probability_2, ..."""
