    target: str = option("", "the label column (empty: the last column)")
