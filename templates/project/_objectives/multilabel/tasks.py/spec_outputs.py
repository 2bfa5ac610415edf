    num_outputs: int  # number of labels (a sample has any subset of them)
