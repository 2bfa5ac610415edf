
Variable length: each batch is padded to its own longest sequence (`pad_collate`), with
lengths and a padding mask; `data.bucket_by_length` batches similar lengths together.
