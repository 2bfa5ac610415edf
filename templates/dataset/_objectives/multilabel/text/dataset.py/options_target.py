    target: str = option("", "the labels column (empty: the last column)")
    label_separator: str = option("|", "separates the labels of a labels cell")
