    weights = checkpoint.get("model_state_dict", {})  # a sharded one (.dcp) keeps them in DCP
