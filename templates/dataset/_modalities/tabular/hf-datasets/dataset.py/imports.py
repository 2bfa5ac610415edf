{%- from "_lib/parts.jinja" import objective_part with context %}
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from ..config import ConfigError, option
from ..tasks import DataSpec
from . import DataBundle, TensorDictDataset, hold_out, note
from ._inputs import RawInputs
from ._streams import Shard, ShardStream, shard_index
from ._synthetic import SyntheticOptions, make_splits
{{- objective_part("dataset/hf-datasets/dataset.py", "tables_import") }}
