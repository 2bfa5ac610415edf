            "lengths": check_lengths(inference.spec.block_size),
