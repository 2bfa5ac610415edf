from ._sequences import pad_collate, variable_length
