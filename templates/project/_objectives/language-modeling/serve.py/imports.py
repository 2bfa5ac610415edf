from .generate import sample
