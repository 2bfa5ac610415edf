from ._sequences import variable_length
