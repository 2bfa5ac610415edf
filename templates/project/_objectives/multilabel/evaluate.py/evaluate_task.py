    weights = checkpoint.get("class_weights")  # the loss as trained (train.pos_weight)
    task = task.for_training(config, bundle.train_targets, weights, device)
    task = task.with_thresholds(checkpoint.get("thresholds"))  # tuned on val in training
