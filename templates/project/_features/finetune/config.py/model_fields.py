    init_from: str = option(
        "", "start from these weights: a checkpoint, a state_dict (.pt/.pth) or .safetensors"
    )
    init_strict: bool = option(False, "init_from: refuse any name or shape that does not match")
    freeze: tuple[str, ...] = option(
        (), 'parameter-name prefixes not trained, e.g. ["features"] or features,pool'
    )
    freeze_bn: bool = option(True, "keep BatchNorm layers inside frozen parts in eval mode")
