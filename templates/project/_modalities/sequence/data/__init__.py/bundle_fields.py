    # Makes the training batches from the sampler and batch size (e.g. length bucketing);
    # None: plain batches of consecutive sampler indices.
    batch_sampler: Callable[[ResumableSampler, int], Sampler[list[int]]] | None = None
