arrays: one flat int32 array of token ids, int64 offsets and label sets; a sample is a
