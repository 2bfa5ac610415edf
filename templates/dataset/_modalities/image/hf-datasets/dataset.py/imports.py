
import functools
import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Dataset

from ..config import ConfigError, option
from ..tasks import DataSpec
from . import Batch, DataBundle, hold_out, note
from ._augment import EpochSeeds, augment
from ._inputs import RawInputs, image_files, to_rgb
from ._streams import Shard, ShardStream, shard_index
from ._synthetic import SyntheticOptions, make_splits
