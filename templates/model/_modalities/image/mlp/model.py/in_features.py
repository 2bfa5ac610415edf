        in_features=spec.in_channels * spec.image_size * spec.image_size,
