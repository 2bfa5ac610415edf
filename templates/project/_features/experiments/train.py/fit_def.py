

def fit(config: Config, fold: tuple[list[int], list[int]] | None = None) -> dict[str, Any]:
    """Train as configured (in one process, or in every process under torchrun); `fold`:
    (training, validation) indices into the training split, for cross-validation."""
