    batches = [example_batch(inference.spec, size) for size in CHECK_BATCH_SIZES]
