    assert item["targets"].dtype == torch.float32
    assert item["targets"].shape == (bundle.spec.num_outputs,)  # multi-hot
    assert set(item["targets"].unique().tolist()) <= {0.0, 1.0}
