    assert item["targets"].shape == (bundle.spec.num_outputs,)
