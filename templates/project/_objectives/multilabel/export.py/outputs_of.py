    """What the output means: label scores, the label names and thresholds by index."""
    task = inference.task
    return {
        "output": {
            "shape": ["batch", task.num_classes],
            "meaning": "label scores (logits); sigmoid for probabilities; a label is "
            "predicted when its probability reaches its threshold",
        },
        "classes": list(task.class_names),
        "thresholds": list(task.thresholds or (0.5,) * task.num_classes),
    }
