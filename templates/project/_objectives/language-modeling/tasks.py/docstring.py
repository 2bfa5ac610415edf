the vocabulary size (the tokeniser itself is in `state`, used by `generate`).
