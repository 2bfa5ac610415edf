"""TOML reading on every Python ptgen supports: `tomllib` from 3.11, its backport `tomli`
(the same API, a dependency only there) on 3.10."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["tomllib"]
