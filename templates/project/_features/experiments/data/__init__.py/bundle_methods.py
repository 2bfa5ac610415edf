
    def select(self, train: list[int], val: list[int]) -> DataBundle:
        """A bundle of some training samples for training and others for validation (a
        fold of `cv`); it keeps everything else, fitted state included."""
        targets = self.train_targets()
        return dataclasses.replace(
            self,
            train=Selection(self.train, train, targets[train]),
            val=Selection(self.train, val, targets[val]),
        )
