    """No gradient sync for this batch: DDP's no_sync (also through torch.compile's
    wrapper), FSDP's no_gradient_sync; a no-op for a plain module."""
    if is_sharded(unwrap(model)):
        return no_gradient_sync(unwrap(model))
