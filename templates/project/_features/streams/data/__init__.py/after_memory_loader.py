

@runtime_checkable
class EpochOrder(Protocol):
    """What the loop calls at each epoch start: where the epoch's samples begin."""

    def set_epoch(self, epoch: int, skip: int = 0) -> None: ...


@runtime_checkable
class BatchesItself(Protocol):
    """A split that makes its own loader, e.g. streamed shards (data/_streams.py of the
    shard kinds); `train`: shuffled, remainder dropped; the loader's `dataset` is then
    what the loop calls set_epoch on."""

    def loader(
        self, bundle: DataBundle, config: Config, info: DistInfo, device: torch.device, train: bool
    ) -> DataLoader: ...
