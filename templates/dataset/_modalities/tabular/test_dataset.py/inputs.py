    assert item["inputs"].shape == (bundle.spec.num_features,)
