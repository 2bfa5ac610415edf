
    spec = DataSpec(num_outputs=1, num_features=len(state["features"]))
