    assert {"pixel_accuracy", "miou", "per_class", "confusion_matrix"} <= result.keys()
    assert 0.0 <= result["miou"] <= 1.0
