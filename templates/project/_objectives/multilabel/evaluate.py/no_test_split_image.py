        raise ConfigError(
            f"{where} has no test split: put it in root/test/ (like root/train/, its images in data.labels_file)"
        )
