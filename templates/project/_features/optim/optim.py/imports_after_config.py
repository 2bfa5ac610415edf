from .optim_choices import LrDrop, OneCycle, other_optimizer
