from .data import EpochOrder, build_data, build_loaders
