    ema: WeightAverage | None  # the average of the weights (train.ema_decay; 0: None)
