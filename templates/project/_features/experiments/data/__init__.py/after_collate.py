

class Selection(Dataset):
    """Some samples of a dataset, by index, with their targets."""

    def __init__(self, dataset: Dataset, indices: list[int], targets: torch.Tensor) -> None:
        self.dataset, self.indices, self.targets = dataset, indices, targets

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices: list[int] | torch.Tensor) -> Sequence[Any]:
        rows = [self.indices[i] for i in indices]
        if hasattr(self.dataset, "__getitems__"):
            return self.dataset.__getitems__(rows)
        return [self.dataset[i] for i in rows]
