arrays: one flat int32 array of token ids, int64 offsets and labels; a sample is a
