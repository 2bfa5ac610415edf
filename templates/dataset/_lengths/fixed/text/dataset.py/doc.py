Sequences are cut to data.max_length tokens and padded to
data.max_length in the dataset (fixed length), so batches need no custom collation.
