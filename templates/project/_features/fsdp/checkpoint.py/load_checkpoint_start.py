    """Load with `weights_only=True`; any damaged or foreign file raises CheckpointError.
    Of a sharded checkpoint directory only state.pt is read (the weights load later)."""
    path = Path(path)
    required, file = REQUIRED_KEYS, path
    if path.is_dir():  # sharded (train.strategy=fsdp); sharding.py imports this module
        from .sharding import SHARDED_KEYS, state_file

        required, file = SHARDED_KEYS, state_file(path)
    checkpoint = load_weights_only(file, map_location)
