    def repeated_blocks(self) -> list[nn.Module]:
        """The stages that train.strategy=fsdp shards one by one (then the rest as one)."""
        return [*self.down, *self.up]
