Every text is padded with the tokenizer's pad token to data.max_length (fixed length);
the padding mask is the inverse of the tokenizer's attention mask.
