
Each table row is one input vector of `num_features` values.
