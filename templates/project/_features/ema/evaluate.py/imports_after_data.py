from .ema import inference_weights
