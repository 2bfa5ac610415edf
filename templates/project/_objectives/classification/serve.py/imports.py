from .predict import forward, ranked
