from .predict import forward, label_sets
