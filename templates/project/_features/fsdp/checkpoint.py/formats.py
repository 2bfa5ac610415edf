

class CheckpointFormat:
    """A checkpoint other than one .pt file, as this module reads it: sharding.py's sharded
    format (train.strategy=fsdp, a .dcp directory). sharding.py builds on this module and
    fills FORMATS when imported (train.py and engine.py import it): this one never imports it.
    """

    required: tuple[str, ...]  # the keys of the file load_checkpoint reads

    def state_file(self, path: Path) -> Path:
        """The file of checkpoint `path` that load_checkpoint reads (the weights load later)."""
        raise NotImplementedError

    def owns(self, path: str | Path, model: torch.nn.Module) -> bool:
        """Whether `load` (not load_state_dict) loads checkpoint `path` into `model`."""
        raise NotImplementedError

    def load(
        self,
        model: torch.nn.Module,
        checkpoint: dict[str, Any],
        path: str | Path,
        optimizer: torch.optim.Optimizer | None,
    ) -> None:
        """The weights into `model` (with `optimizer`: its state too)."""
        raise NotImplementedError


FORMATS: dict[str, CheckpointFormat] = {}  # by suffix: sharding.py adds ".dcp"
