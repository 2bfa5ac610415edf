CHECK_LENGTHS = (0, 1, 7)  # tokens per check batch (0: data.block_size, the traced one)
