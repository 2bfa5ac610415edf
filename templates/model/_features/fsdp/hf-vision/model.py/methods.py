
    def repeated_blocks(self) -> list[nn.Module]:
        """The blocks that train.strategy=fsdp shards one by one (then the rest as one): the
        backbone's longest ModuleList (`encoder.layer` in ViT, the stages in ResNet)."""
        lists = [m for m in self.backbone.modules() if isinstance(m, nn.ModuleList)]
        return list(max(lists, key=len)) if lists else [self.backbone]
