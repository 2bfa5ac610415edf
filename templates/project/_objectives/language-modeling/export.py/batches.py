    batches = token_batches(inference.spec.block_size, inference.spec.num_outputs)
