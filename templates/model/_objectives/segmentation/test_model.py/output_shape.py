    size = SPEC.image_size
    assert outputs.shape == (4, SPEC.num_outputs, size, size)  # per-pixel class scores
