from ._sequences import PAD_INDEX, pad_collate, variable_length
