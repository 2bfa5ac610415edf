from ._sequences import fixed_length
