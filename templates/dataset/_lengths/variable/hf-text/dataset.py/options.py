    bucket_by_length: bool = option(False, "batch texts of similar length together (less padding)")
