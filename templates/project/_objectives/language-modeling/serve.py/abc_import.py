from collections.abc import AsyncIterator, Callable, Iterator
