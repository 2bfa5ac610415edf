    num_outputs: int  # number of target values per sample
