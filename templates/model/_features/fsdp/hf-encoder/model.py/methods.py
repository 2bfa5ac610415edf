    def repeated_blocks(self) -> list[nn.Module]:
        """The blocks that train.strategy=fsdp shards one by one (then the rest as one): the
        encoder's layers, its longest ModuleList (`encoder.layer` in BERT)."""
        lists = [m for m in self.encoder.modules() if isinstance(m, nn.ModuleList)]
        return list(max(lists, key=len)) if lists else [self.encoder]
