        if type(train_split.features[target]).__name__ == "ClassLabel":
            state["classes"] = names  # the ClassLabel's order, not sorted
