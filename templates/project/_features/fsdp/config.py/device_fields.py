    strategy: str = option(
        "auto",
        "under torchrun: ddp (auto) copies the model, fsdp shards it (.dcp checkpoints)",
        choices=("auto", "ddp", "fsdp"),
    )
