from .imbalance import balance
