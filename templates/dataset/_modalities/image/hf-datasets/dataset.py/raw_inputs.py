    """Image files, folders or globs, prepared exactly as in training; None for a model
    trained on the synthetic images (they have no file format)."""
    return image_inputs(state, cfg.image_size, cfg.max_image_pixels) if state else None
