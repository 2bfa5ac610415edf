
from . import DataBundle
from ._sequences import fixed_length
