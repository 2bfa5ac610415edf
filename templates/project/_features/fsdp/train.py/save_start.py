    """Checkpoint `stem`.pt from rank 0, or under train.strategy=fsdp `stem`.dcp, a
    directory every rank writes its shards into; never non-finite weights. Every rank
    waits for it."""
    fsdp = run.config.train.strategy == "fsdp"
    path = run.out_dir / f"{stem}{ckpt.SUFFIXES[fsdp]}"
