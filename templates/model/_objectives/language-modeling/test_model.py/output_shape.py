    length = example_batch(SPEC, 4)["inputs"].shape[1]
    assert outputs.shape == (4, length, SPEC.num_outputs)  # a score per next token
