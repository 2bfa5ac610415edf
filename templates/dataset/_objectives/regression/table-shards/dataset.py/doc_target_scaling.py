The target is standardised too; the task turns predictions back into its own units with
state["target_mean"] and state["target_std"].
