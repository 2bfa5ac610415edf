    weights = saved.get("class_weights")  # train.class_weights, data.balanced_sampler
    task, sample_weights = balance(task, config, bundle.train_targets, weights, device)
