from .sharding import save_sharded, shard_model
