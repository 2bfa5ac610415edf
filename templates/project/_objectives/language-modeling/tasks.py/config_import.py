from .config import ConfigError
