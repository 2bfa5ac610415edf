        self.waiting = 0.0  # seconds spent in the loader's next() since the last flush
        self.waited = self.elapsed = 0.0  # the run's totals, over the flushed intervals
