        self.train_labels: set[str] = set()  # label cells, split by `finish`
