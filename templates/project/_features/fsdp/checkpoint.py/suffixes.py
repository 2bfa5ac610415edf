SUFFIXES = (".pt", ".dcp")  # a checkpoint file; a sharded checkpoint directory
