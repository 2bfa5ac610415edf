    sampler: EpochOrder  # set_epoch(epoch, skip): where each epoch starts
