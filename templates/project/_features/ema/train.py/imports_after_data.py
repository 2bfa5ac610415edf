from .ema import WeightAverage
