Batches are padded with the tokenizer's pad token to their own longest text (variable
length); the padding mask is the inverse of the tokenizer's attention mask.
