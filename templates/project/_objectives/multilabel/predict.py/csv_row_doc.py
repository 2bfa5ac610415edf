    """A record as flat CSV cells: the labels joined by "|", then probability_<label>"""
