        raise ConfigError(
            f"{where} has no test split: put it in root/test/<class>/ (like root/train/)"
        )
