        if self.weights is not None:  # data.balanced_sampler: with replacement, by weight
            order = torch.multinomial(self.weights, sampler.total_size, True, generator=generator)
            return order[sampler.rank :: sampler.num_replicas]
