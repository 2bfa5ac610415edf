    """Image files, folders or globs, prepared exactly as in training; None for a model
    trained on the synthetic images (they have no file format)."""
    if not state:
        return None
    mean, std = state["mean"].view(3, 1, 1), state["std"].view(3, 1, 1)  # (3, 1, 1)

    def prepare(path: Path) -> dict[str, torch.Tensor]:
        image = load_image(path, cfg.image_size, cfg.max_image_pixels)  # (3, S, S)
        return {"inputs": (image - mean) / std}

    steps = {
        "read": "any Pillow image, EXIF-rotated, converted to RGB",
        "resize": [cfg.image_size, cfg.image_size],  # width, height
        "resample": "bilinear",  # Pillow's filter
        "scale": 1 / 255,  # pixel bytes to [0, 1]
        "normalize": {"mean": state["mean"].tolist(), "std": state["std"].tolist()},
        "layout": "CHW float32, (pixel * scale - mean) / std per channel",
    }
    return RawInputs(lambda sources: image_files(sources, IMAGE_EXTENSIONS), prepare, steps)
