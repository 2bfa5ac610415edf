
from ..config import option
from . import DataBundle
from ._sequences import variable_length
