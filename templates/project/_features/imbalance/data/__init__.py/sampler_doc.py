    With `weights` (data.balanced_sampler) it draws with replacement instead, each index
    with probability proportional to its weight, also from (seed, epoch) alone.
