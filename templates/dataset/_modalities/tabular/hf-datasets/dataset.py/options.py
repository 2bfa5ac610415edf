    ignore: tuple[str, ...] = option((), "columns left out: ids, free text, leaks of the target")
    max_categories: int = option(50, "one-hot columns per categorical column, at most", low=1)
