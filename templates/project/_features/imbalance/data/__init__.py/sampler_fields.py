        self.weights = weights
