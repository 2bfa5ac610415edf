    """What the output means: values to be scaled into the target's units."""
    task = inference.task
    return {
        "output": {
            "shape": ["batch", task.num_outputs],
            "meaning": "value = output * target.std + target.mean",
        },
        "target": {"mean": list(task.target_mean), "std": list(task.target_std)},
    }
