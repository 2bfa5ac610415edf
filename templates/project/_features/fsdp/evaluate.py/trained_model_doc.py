    A sharded checkpoint is a directory.
