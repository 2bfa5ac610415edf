    ema_decay: float = option(
        0.999, "EMA: decay * average + (1 - decay) * weights (0: no average)", low=0.0, high=1.0
    )
    ema_warmup_steps: int = option(
        10, "EMA warm-up: the decay at update t is min(ema_decay, (1 + t) / (N + t))", low=0
    )
    ema_eval: bool = option(True, "evaluate, pick best.pt, predict and export with the EMA weights")
