
The target is standardised too (the model predicts standard deviations); the task turns
predictions and metrics back into the target's own units with state["target_mean"] and
state["target_std"].
