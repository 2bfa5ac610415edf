    def repeated_blocks(self) -> list[nn.Module]:
        """The blocks that train.strategy=fsdp shards one by one (then the rest as one)."""
        return list(self.blocks)
