    assert batch["inputs"].shape == mask.shape == (4, int(lengths.max()))  # padded per batch
