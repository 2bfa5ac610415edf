        raise ConfigError(
            f"{where} has no test split: put it in root/test/ (its images in data.labels_file)"
        )
