    num_outputs: int  # vocabulary size: the model scores every possible next token
