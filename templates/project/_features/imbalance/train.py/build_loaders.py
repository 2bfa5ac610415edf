    train_loader, val_loader, sampler = build_loaders(bundle, config, info, device, sample_weights)
