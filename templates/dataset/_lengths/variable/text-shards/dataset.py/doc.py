Sequences are cut to data.max_length tokens and padded per batch (variable length).
