    summary_depth: int = option(
        1, "module levels in the model table printed at the start (0: no summary)", low=0
    )
