from .sharding import is_sharded, no_gradient_sync, spare_forwards
