    num_outputs: int  # number of classes
