        """Yields the batches, adding the time spent waiting for each to the loss window.
        Host time around the loader's next() only: no device sync (a device that is the
        bottleneck makes the host wait elsewhere, in the step, not here)."""
        self.window.resume()
        start = time.perf_counter()
        iterator = iter(batches)  # (re)starts the epoch's loading: counted as waiting too
        for batch in iterator:
            self.window.waiting += time.perf_counter() - start
            yield batch
            start = time.perf_counter()
        self.window.waiting += time.perf_counter() - start
        self.window.pause()  # the epoch ended: evaluation and checkpoints are not step time

    def data_wait_share(self) -> float:
        """The share of the logged training time spent waiting for batches (0 if none)."""
        return self.window.waited / self.window.elapsed if self.window.elapsed else 0.0
