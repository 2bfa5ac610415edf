    assert item["targets"].dtype == torch.long
    assert 0 <= int(item["targets"]) < bundle.spec.num_outputs
