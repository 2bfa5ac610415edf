
    bucket_by_length: bool = option(False, "batch similar lengths together (less padding)")
