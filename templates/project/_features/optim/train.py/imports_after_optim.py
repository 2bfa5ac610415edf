from .optim_choices import lower_lr
