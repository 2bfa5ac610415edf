    """A record as flat CSV cells: several values become value_1, value_2, ..."""
