A checkpoint is one file (`last.pt`), or under train.strategy=fsdp a directory of shards
(`last.dcp/`, see sharding.py), written under a temporary name and then renamed: a crash
