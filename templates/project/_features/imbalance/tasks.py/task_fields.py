    class_weights: torch.Tensor | None = None  # (num_classes,) set by imbalance.balance
