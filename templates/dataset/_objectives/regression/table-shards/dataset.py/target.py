

def fit_target(sums: ColumnSums, target: str) -> dict[str, Any]:
    """The target's training mean and std (std 1 for a constant target)."""
    if not sums.numeric:
        raise ConfigError(f"the target {target!r} is not numeric")
    column = sums.column(target, 0)
    return {"target_mean": column["mean"], "target_std": column["std"]}


def to_sample(row: dict[str, Any], state: dict[str, Any]) -> dict[str, torch.Tensor]:
    value = row.get(state["target"])
    if value is None:
        raise ConfigError(f"a row has no target ({state['target']})")
    target = (float(value) - state["target_mean"]) / state["target_std"]
    return {"inputs": encode_row(row, state["columns"]), "targets": torch.tensor([target])}  # (1,)
