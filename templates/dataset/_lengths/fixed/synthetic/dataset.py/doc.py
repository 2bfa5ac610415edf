
Fixed length: every sequence is padded or cut to `data.max_length` tokens in the dataset,
so batches need no custom collation; the padding mask comes from the pad token.
