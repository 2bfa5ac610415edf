arrays (`TokenArrays`: one flat int32 array, int64 offsets, float32 multi-hot label
sets), cached and memory-mapped on the next run (`cached_tokens`).
