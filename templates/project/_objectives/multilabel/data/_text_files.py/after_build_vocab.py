

def label_names(cell: str, separator: str) -> list[str]:
    """The labels of a cell, sorted: 'sports|politics' -> ['politics', 'sports']; '' -> [];
    an empty `separator` takes the whole cell as one label."""
    names = cell.split(separator) if separator else [cell]
    return sorted({name.strip() for name in names} - {""})
