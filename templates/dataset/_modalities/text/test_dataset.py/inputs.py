    assert item["inputs"].shape == (bundle.spec.block_size,)
    assert item["inputs"].dtype == torch.long
    assert int(item["inputs"].max()) < bundle.spec.num_outputs
