from .transfer import freeze, frozen_batch_norm_eval, head_only, init_weights
