from pathlib import Path
from typing import Any
