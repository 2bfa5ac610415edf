    dataset = dataset.dataset if isinstance(dataset, Selection) else dataset  # a fold of cv
