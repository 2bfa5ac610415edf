) -> tuple[DataLoader, DataLoader, EpochOrder]:
