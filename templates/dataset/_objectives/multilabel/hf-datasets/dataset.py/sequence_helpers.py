

def label_set_names(split: Any, name: str, rows: torch.Tensor | None) -> list[str]:
    """The labels of a column of label sets: a list of ClassLabel's names, in its order;
    else the values in the training rows, sorted."""
    kind = split.features[name]
    inner = getattr(kind, "feature", None)  # a list's values
    if type(inner).__name__ == "ClassLabel":
        return list(inner.names)
    if not str(getattr(inner, "dtype", "")).startswith(("string", "large_string", "int", "uint")):
        raise ConfigError(
            f"data.label_column {name!r} holds {kind}, not label sets (lists of ClassLabel, "
            "text or integers); is it the right column?"
        )
    labels = {str(value) for cell in column(split, name, rows).to_pylist() for value in cell or []}
    if not labels:
        raise ConfigError(f"data.label_column {name!r}: no training row has a label")
    return sorted(labels)


def multi_hot(cell: list[Any] | None, lookup: dict[str, int], count: int) -> torch.Tensor:
    """(K,) 1.0 for each label of the set (one training never saw is left out)."""
    targets = torch.zeros(count)
    for value in cell or []:
        if str(value) in lookup:
            targets[lookup[str(value)]] = 1.0
    return targets


def label_sets(split: Any, name: str, rows: torch.Tensor | None, classes: list[str]) -> torch.Tensor:
    """Multi-hot targets (N, K) of the rows' label sets."""
    lookup = label_lookup(split, name, classes)
    cells = column(split, name, rows).to_pylist()
    return torch.stack([multi_hot(cell, lookup, len(classes)) for cell in cells])  # (N, K)
