from ._sequences import fixed_length, pad_collate
