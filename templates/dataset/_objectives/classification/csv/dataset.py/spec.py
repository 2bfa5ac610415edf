
    spec = DataSpec(num_outputs=len(state["classes"]), num_features=len(state["features"]))
