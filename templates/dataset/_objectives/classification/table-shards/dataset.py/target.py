

def fit_target(sums: ColumnSums, target: str) -> dict[str, Any]:
    """The class names: the training split's target values, sorted (as numbers if they are)."""
    if len(sums.values) < 2:
        raise ConfigError(f"every training row has the same {target!r}; a classifier needs two or more")
    return {"classes": sorted(sums.values, key=lambda label: (float(label), label) if sums.numeric else (0, label))}


def to_sample(row: dict[str, Any], state: dict[str, Any]) -> dict[str, torch.Tensor]:
    label = row.get(state["target"])
    if label is None or str(label) not in state["classes"]:
        raise ConfigError(f"a row's class {label!r} was not seen in training")
    target = torch.tensor(state["classes"].index(str(label)))  # ()
    return {"inputs": encode_row(row, state["columns"]), "targets": target}
