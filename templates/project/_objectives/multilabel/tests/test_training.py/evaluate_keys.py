    assert {"micro_f1", "macro_f1", "map", "per_class", "thresholds"} <= result.keys()
    saved = torch.load(checkpoint, map_location="cpu", weights_only=True)["thresholds"]
    assert result["thresholds"] == saved  # decided with the thresholds tuned in training
