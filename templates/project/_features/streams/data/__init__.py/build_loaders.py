    if isinstance(bundle.train, BatchesItself):
        train = bundle.train.loader(bundle, config, info, device, True)
        return train, eval_loader(bundle, bundle.val, config, info, device), train.dataset
