from .data import DataBundle, EpochOrder, build_data, build_loaders
