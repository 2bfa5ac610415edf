    if isinstance(split, BatchesItself):
        return split.loader(bundle, config, info, device, False)
