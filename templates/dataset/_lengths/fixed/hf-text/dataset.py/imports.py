from ._sequences import PAD_INDEX, fixed_length, pad_collate
