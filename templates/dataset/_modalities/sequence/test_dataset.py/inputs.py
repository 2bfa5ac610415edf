    assert item["inputs"].dim() == 1 and item["inputs"].dtype == torch.long
    assert int(item["inputs"].max()) < bundle.spec.vocab_size
