    label_separator: str = "|"  # splits a label cell into its labels
