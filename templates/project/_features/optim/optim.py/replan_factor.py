    if not isinstance(factor, (LrFactor, LrDrop)) or factor.total == total:
