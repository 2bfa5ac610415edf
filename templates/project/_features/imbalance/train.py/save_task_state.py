    weights = run.task.class_weights  # train.class_weights: evaluate uses them too
    state["class_weights"] = None if weights is None else weights.cpu()
