from .predict import colour_table, forward
