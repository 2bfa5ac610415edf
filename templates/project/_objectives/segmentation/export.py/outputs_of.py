    """What the output means: per-pixel class scores, and the class names by index."""
    task = inference.task
    return {
        "output": {
            "shape": ["batch", task.num_classes, "height", "width"],
            "meaning": "per-pixel class scores (logits); argmax over dim 1 for the mask",
        },
        "classes": list(task.class_names),
    }
