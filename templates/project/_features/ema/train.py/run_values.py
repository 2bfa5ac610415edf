        ema=ema,
