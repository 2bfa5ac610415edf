    if bundle.batch_sampler is not None:
        batches = bundle.batch_sampler(sampler, batch_size)
        loader = MemoryLoader if in_memory(bundle.train) else DataLoader
        train = loader(bundle.train, batch_sampler=batches, **common)
    elif in_memory(bundle.train):
