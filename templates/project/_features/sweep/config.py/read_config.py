        values.pop("sweep", None)  # a sweep's search space, read by `sweep` only
