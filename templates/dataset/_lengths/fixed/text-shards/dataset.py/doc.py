Sequences are cut to data.max_length tokens and padded to data.max_length (fixed length).
