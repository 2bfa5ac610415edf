from typing import Any, Protocol, runtime_checkable
