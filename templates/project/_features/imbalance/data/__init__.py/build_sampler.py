    sampler = ResumableSampler(bundle.train, info, config.train.seed, sample_weights)
