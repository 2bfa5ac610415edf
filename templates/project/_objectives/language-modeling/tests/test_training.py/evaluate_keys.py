    assert {"nats_per_token", "perplexity"} <= result.keys()
    assert abs(result["nats_per_token"] - result["loss"]) < 1e-4  # every block is full
