

def token_batches(block_size: int, vocab_size: int) -> list[Batch]:
    """Random token ids, one batch per CHECK_BATCH_SIZES and CHECK_LENGTHS: the first (the
    traced one) is a whole block, whose length bounds the exported length (dynamic_shapes)."""
    gen = torch.Generator().manual_seed(0)
    return [
        {"inputs": torch.randint(0, vocab_size, (size, length), generator=gen)}  # (B, T)
        for size, length in zip(CHECK_BATCH_SIZES, check_lengths(block_size), strict=True)
    ]


def check_lengths(block_size: int) -> list[int]:
    """CHECK_LENGTHS for this block size (0: all of it; none longer than it)."""
    return [min(n, block_size) or block_size for n in CHECK_LENGTHS]
