from .predict import forward, values
