    assert {"mae", "rmse", "r2"} <= result.keys()
