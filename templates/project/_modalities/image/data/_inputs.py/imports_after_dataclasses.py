from pathlib import Path
