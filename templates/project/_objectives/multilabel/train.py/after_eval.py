        state.thresholds = result.pop("thresholds")  # tuned on this evaluation; checkpointed
