        targets = self.targets[torch.as_tensor(indices, dtype=torch.long)]  # (B, L)
