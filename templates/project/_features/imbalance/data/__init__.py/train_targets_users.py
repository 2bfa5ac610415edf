train.class_weights=auto, data.balanced_sampler
