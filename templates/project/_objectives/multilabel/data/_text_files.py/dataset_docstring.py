    """Samples {"inputs": (T,) int64 token ids, "targets": (L,) multi-hot labels} sliced from
