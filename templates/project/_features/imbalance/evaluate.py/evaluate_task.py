    weights = checkpoint.get("class_weights")  # the loss as trained (train.class_weights)
    task, _ = balance(task, config, bundle.train_targets, weights, device)
