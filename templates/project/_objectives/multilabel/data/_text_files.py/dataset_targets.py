        self.targets = torch.from_numpy(np.asarray(arrays.labels[self.rows]))  # (N, L)
