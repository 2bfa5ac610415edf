        raise ConfigError(
            f"{where} has no test split: put it in root/test/images/ and root/test/masks/"
        )
