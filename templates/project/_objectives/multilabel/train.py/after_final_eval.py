        result.pop("thresholds")
