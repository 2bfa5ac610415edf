
Rows = list[tuple[str, str]]  # (text, label cell) pairs
