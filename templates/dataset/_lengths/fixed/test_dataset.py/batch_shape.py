    assert batch["inputs"].shape == mask.shape == (4, Options().max_length)  # fixed length
