    weights = run.task.class_weights  # train.pos_weight: evaluate uses them too
    state["class_weights"] = None if weights is None else weights.cpu()
