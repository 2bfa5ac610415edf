        in_features=spec.num_features,
