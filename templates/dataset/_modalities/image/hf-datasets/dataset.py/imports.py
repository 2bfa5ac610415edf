
import bisect
import dataclasses
import functools
import hashlib
import io
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import torch

from ..config import ConfigError, option
from ..tasks import DataSpec
from . import DataBundle, hold_out, note
from ._images import MAX_STATS_IMAGES, ImageCache, Images, image_inputs, load_image, problem
from ._inputs import RawInputs
from ._streams import Shard, ShardStream, shard_index
from ._synthetic import SyntheticOptions, make_splits
