the target's mean and std (`state["target_mean"]`, `state["target_std"]`, saved by a
dataset that standardises its targets), so metrics and predictions are in target units.
