    task = task.for_training(config, bundle.train_targets, saved.get("class_weights"), device)
