

def missing_targets(table: Table, target: str, na_values: Iterable[str]) -> np.ndarray:
    """(N,) True where the class is missing (empty, or one of `na_values`)."""
    codes, labels = label_codes(table, target)
    na = set(na_values)
    missing = np.array([label in na for label in labels] + [True])  # code -1: the last
    return missing[table.of(codes)]


def fit_target(table: Table, target: str) -> dict[str, Any]:
    """The class names: the training split's target values, sorted (as numbers if they are)."""
    codes, labels = label_codes(table, target)
    counts = np.bincount(table.of(codes) + 1, minlength=len(labels) + 1)  # [0]: missing
    labels = {label for label, count in zip(labels, counts[1:], strict=True) if count}
    if len(labels) < 2:
        raise ConfigError(
            f"{table.path}: every training row has the class {labels.pop()!r}; "
            "a classifier needs two or more"
        )
    if all(to_number(label) is not None for label in labels):
        return {"classes": sorted(labels, key=lambda label: (to_number(label), label))}
    return {"classes": sorted(labels)}


def encode_targets(table: Table, target: str, state: dict[str, Any]) -> torch.Tensor:
    """Class indices (N,); a class training never saw is an error."""
    codes, labels = label_codes(table, target)
    classes = {label: i for i, label in enumerate(state["classes"])}
    lookup = np.array([classes.get(label, -1) for label in labels] + [-1], np.int64)  # -1: last
    rows = table.of(codes)  # (N,)
    out = lookup[rows]  # (N,)
    if (out < 0).any():
        unknown = sorted({labels[code] for code in np.unique(rows[out < 0]).tolist() if code >= 0})
        raise ConfigError(f"{table.path}: classes not seen in training: {', '.join(unknown)}")
    return torch.from_numpy(out)
