    task = task.with_thresholds(checkpoint.get("thresholds"))  # tuned on val in training
