    """A record as flat CSV cells: the class shares become share_<class>, ..."""
