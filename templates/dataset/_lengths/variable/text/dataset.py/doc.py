Sequences are cut to data.max_length tokens and padded per batch
(variable length): `pad_collate` pads each batch to its own longest sequence;
`data.bucket_by_length` batches similar lengths together.
