from collections.abc import Callable
