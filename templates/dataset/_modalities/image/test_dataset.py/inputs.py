    spec = bundle.spec
    assert item["inputs"].shape == (spec.in_channels, spec.image_size, spec.image_size)
