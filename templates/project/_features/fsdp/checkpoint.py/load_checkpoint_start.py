    """Load with `weights_only=True`; any damaged or foreign file raises CheckpointError.
    Of a sharded checkpoint directory only state.pt is read (the weights load later)."""
    path = Path(path)
    required, file = REQUIRED_KEYS, path
    if path.is_dir():  # sharded (train.strategy=fsdp): read as its format says
        required, file = FORMATS[".dcp"].required, FORMATS[".dcp"].state_file(path)
    checkpoint = load_weights_only(file, map_location)
