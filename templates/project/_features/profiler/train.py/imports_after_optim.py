from .profiler import advise_on_data
