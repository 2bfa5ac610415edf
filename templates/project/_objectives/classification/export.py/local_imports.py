from .config import component
from .data._synthetic import example_batch
