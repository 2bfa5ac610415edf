    assert torch.equal(item["targets"][:-1], item["inputs"][1:])  # the next tokens
    following = bundle.train[1]["inputs"]
    assert torch.equal(item["targets"][-1:], following[:1])  # blocks are contiguous
