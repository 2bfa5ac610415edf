    if config.train.nesterov and (config.train.optimizer != "sgd" or config.train.momentum <= 0):
        raise ConfigError(
            "train.nesterov needs train.optimizer=sgd and train.momentum > 0: "
            "--set train.optimizer=sgd --set train.momentum=0.9, or --set train.nesterov=false"
        )
