

def missing_targets(table: Table, target: str, na_values: Iterable[str]) -> np.ndarray:
    """(N,) True where the target is missing (empty, or one of `na_values`)."""
    return missing_cells(table, target, na_values)


def target_values(table: Table, target: str) -> torch.Tensor:
    """The target column as numbers (N,); a cell that is not one is an error."""
    if target in table.numbers:
        return table.values(target)  # (N,) float64
    cells = table.column(target)
    values, bad = as_numbers(cells, [])  # (N,) float64
    if bad:
        row, cell = first_row(cells, bad)
        raise ConfigError(f"{table.where(row)}: the target ({target}) is not a number ({cell!r})")
    return to_tensor(values)  # (N,)


def fit_target(table: Table, target: str) -> dict[str, Any]:
    """The target's training mean and std (std 1 for a constant target), a block at a time."""
    mean, std = pooled([moments(target_values(part, target)) for _, part in table.blocks()])
    return {"target_mean": mean, "target_std": std}


def encode_targets(table: Table, target: str, state: dict[str, Any]) -> torch.Tensor:
    """Standardised targets (N, 1)."""
    values = target_values(table, target)  # (N,)
    return ((values - state["target_mean"]) / state["target_std"]).float()[:, None]  # (N, 1)
