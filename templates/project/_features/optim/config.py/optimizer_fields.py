    optimizer: str = option("adamw", "the optimizer", choices=("adamw", "adam", "sgd"))
    weight_decay: float = option(0.01, "weight decay (decoupled for adamw)", low=0.0)
    momentum: float = option(0.9, "sgd: momentum", low=0.0, high=1.0)
    nesterov: bool = option(False, "sgd: Nesterov momentum (needs momentum > 0)")
    scheduler: str = option(
        "cosine",
        "learning-rate schedule after the warm-up",
        choices=("cosine", "onecycle", "step", "plateau", "constant"),
    )
    warmup_steps: int = option({{ train_defaults.warmup_steps | default(0) }}, "linear warm-up steps (onecycle: its rising phase)", low=0)
    lr_gamma: float = option(0.1, "step, plateau: multiply the lr by this at each drop", low=0.0)
    lr_step_epochs: int = option(3, "step: drop the lr every N epochs", low=1)
    lr_patience: int = option(2, "plateau: evaluations without improvement per lr drop", low=1)
