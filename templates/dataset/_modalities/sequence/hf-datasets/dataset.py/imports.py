{%- from "_lib/parts.jinja" import length_lines with context %}
import dataclasses
import functools
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Dataset

from ..config import ConfigError, option
from ..tasks import DataSpec
from . import DataBundle, TensorDictDataset, hold_out
from ._inputs import RawInputs
{{ length_lines("dataset/hf-text/dataset.py", "imports") }}
from ._streams import Shard, ShardStream, shard_index
from ._synthetic import SyntheticOptions, make_splits
from ._text_files import build_vocab, encode, tokenize, word_inputs
