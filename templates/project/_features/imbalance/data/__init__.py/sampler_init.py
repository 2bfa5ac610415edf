    def __init__(
        self, dataset: Dataset, info: DistInfo, seed: int, weights: torch.Tensor | None = None
    ) -> None:
