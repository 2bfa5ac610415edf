    """What the output means: class scores, and the class names by index."""
    task = inference.task
    return {
        "output": {
            "shape": ["batch", task.num_classes],
            "meaning": "class scores (logits); softmax for probabilities",
        },
        "classes": list(task.class_names),
    }
