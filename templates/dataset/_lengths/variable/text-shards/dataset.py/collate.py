    collate = pad_collate
