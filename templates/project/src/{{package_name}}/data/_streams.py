"""Datasets larger than memory: samples streamed from shard files in a resumable order.

A shard is one file of samples (say `train/part-0001.jsonl`); a dataset kind that streams
gives `ShardStream` the split's shards, a function reading a shard's raw records and one
decoding a record into a sample. `ShardStream` is an IterableDataset of whole batches:

- Order. Each epoch the shards are shuffled from (seed, epoch) and read one after the
  other: one sequence of the split's N samples. Process r of R (torchrun's ranks) takes
  the slice [r * N // R, (r + 1) * N // R) of it; in training every rank takes N // R
  samples and drops what is left after its last full batch, so every rank takes the same
  number of steps (DDP waits for the slowest). That drops fewer than R + R * batch_size
  samples an epoch, different ones each epoch. Evaluation drops nothing and shuffles
  nothing: every sample once across ranks.
- Shuffling. Training passes each rank's slice through a buffer of `shuffle_buffer`
  samples seeded from (seed, epoch, rank): a sample leaves at most that many places
  early. Memory holds the buffer's raw records, never a shard.
- Workers. DataLoader worker w of W collates the rank's batches w, w + W, ...: each
  worker reads every raw record of its rank (lines, bytes: cheap) but decodes only those
  of its own batches. The batches are therefore the same whatever data.num_workers is.
- Resume. `set_epoch(epoch, skip)` starts the epoch after `skip` samples (the batches
  already trained, from the checkpoint's epoch and batch_in_epoch): the order is
  replayed and the skipped records are read but never decoded.

`shard_index` counts each shard's samples once and keeps the counts in the cache folder
(`data.cache_dir`, default `runs/cache`: never beside the shards, which may be read-only),
one file per split folder, keyed by each shard's size and modification time, so the epoch
length (`len`: batches of this rank) is known before a shard is read.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import random
import sys
import tarfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, IterableDataset, default_collate, get_worker_info

from ..config import Config, ConfigError
from ..runtime import DistInfo
from . import DataBundle, loader_options, note, worker_count

CACHE_DIR = "runs/cache"  # the shard counts' folder when the kind passes none (data.cache_dir)
UNCACHED: set[str] = set()  # cache folders found unwritable (said once)


@dataclass(frozen=True)
class Shard:
    path: Path
    samples: int


# (shard, first) -> the shard's raw records from its `first` on; record -> sample
ReadShard = Callable[[Path, int], Iterator[Any]]
Decode = Callable[[Any], dict[str, torch.Tensor]]


@dataclass(eq=False)
class ShardStream(IterableDataset):
    """Batches (lists of samples) of a sharded split; see the module's docstring.

    `batch_size`, `rank`, `world_size` and `train` are set by the loaders (`for_loader`)."""

    shards: list[Shard]
    read: ReadShard  # module-level functions (or partials): workers may be spawned
    decode: Decode
    seed: int = 0
    shuffle_buffer: int = 1000
    batch_size: int = 1
    rank: int = 0
    world_size: int = 1
    train: bool = False  # shuffle and drop the remainder (training) or neither (evaluation)
    epoch: int = 0
    skip: int = 0  # samples of this rank's epoch already trained on (resume)

    def for_loader(self, batch_size: int, rank: int, world_size: int, train: bool) -> ShardStream:
        return dataclasses.replace(
            self, batch_size=batch_size, rank=rank, world_size=world_size, train=train
        )

    def loader(
        self, bundle: DataBundle, config: Config, info: DistInfo, device: torch.device, train: bool
    ) -> DataLoader:
        """This process's loader of the split (data.BatchesItself). The stream yields lists
        of samples, collated in the workers; workers start afresh each epoch (not
        persistent), so they take the stream's epoch and position."""
        batch_size = config.train.batch_size
        stream = self.for_loader(batch_size, info.rank, info.world_size, train)
        if train and len(stream) == 0:
            raise ConfigError(
                f"the training shards hold fewer than one batch of {batch_size} per process; "
                "lower train.batch_size"
            )
        workers = worker_count(config.data.num_workers, stream)
        options = loader_options(workers, device, config.train.seed)
        options["persistent_workers"] = False
        collate = bundle.collate_fn or default_collate
        return DataLoader(stream, batch_size=None, collate_fn=collate, **options)

    def set_epoch(self, epoch: int, skip: int = 0) -> None:
        """Before each epoch (the loader's workers start afresh each epoch and take it)."""
        self.epoch, self.skip = epoch, skip

    def __len__(self) -> int:
        """Batches of this rank left in the epoch."""
        return self._batches() - self.skip // self.batch_size

    def __iter__(self) -> Iterator[list[dict[str, torch.Tensor]]]:
        worker = get_worker_info()
        index, workers = (worker.id, worker.num_workers) if worker else (0, 1)
        done = self.skip // self.batch_size * self.batch_size
        records = itertools.islice(self._records(), done, None)  # replayed, never decoded
        for number, batch in enumerate(chunks(records, self.batch_size, len(self))):
            if number % workers == index:
                yield [self.decode(record) for record in batch]

    def _slice(self) -> tuple[int, int]:
        """This rank's [start, stop) in the epoch's sequence of samples."""
        total = sum(shard.samples for shard in self.shards)
        if self.train:
            share = total // self.world_size
            return self.rank * share, (self.rank + 1) * share
        return self.rank * total // self.world_size, (self.rank + 1) * total // self.world_size

    def _batches(self) -> int:
        start, stop = self._slice()
        whole, part = divmod(stop - start, self.batch_size)
        return whole + (part > 0 and not self.train)

    def _records(self) -> Iterator[Any]:
        shards = list(self.shards)
        if self.train:
            random.Random(f"shards {self.seed} {self.epoch}").shuffle(shards)
        start, stop = self._slice()
        records = read_range(shards, self.read, start, stop)
        if not self.train:
            return records
        seed = f"buffer {self.seed} {self.epoch} {self.rank}"
        return buffer_shuffle(records, self.shuffle_buffer, random.Random(seed))


def read_range(shards: list[Shard], read: ReadShard, start: int, stop: int) -> Iterator[Any]:
    """Records [start, stop) of the shards read one after the other; whole shards before
    `start` are passed over unread."""
    offset = 0
    for shard in shards:
        begin, end = max(start - offset, 0), min(stop - offset, shard.samples)
        offset += shard.samples
        if begin >= end:
            continue
        yield from itertools.islice(read(shard.path, begin), end - begin)
        if offset >= stop:
            return


def buffer_shuffle(records: Iterable[Any], size: int, rng: random.Random) -> Iterator[Any]:
    """The records in an order shuffled within a window: keep `size` of them, send out a
    random one as each new one comes in, then the rest in random order."""
    buffer: list[Any] = []
    for record in records:
        if len(buffer) < size:
            buffer.append(record)
            continue
        pick = rng.randrange(size)
        yield buffer[pick]
        buffer[pick] = record
    rng.shuffle(buffer)
    yield from buffer


def chunks(records: Iterator[Any], size: int, count: int) -> Iterator[list[Any]]:
    """At most `count` lists of `size` records (the last may be shorter)."""
    for _ in range(count):
        chunk = list(itertools.islice(records, size))
        if not chunk:
            return
        yield chunk


def shard_index(
    paths: list[Path], count: Callable[[Path], int], cache_dir: str | Path = CACHE_DIR
) -> list[Shard]:
    """Each shard with its number of samples, counted once: the counts are kept in
    `index_file` in `cache_dir` (never beside the shards: the data may be read-only),
    reused while a file's size and modification time are unchanged (a changed shard is
    counted again). A cache folder that cannot be written is no error: the shards are
    then counted again next time."""
    if not paths:
        return []
    file = index_file(paths[0].parent, cache_dir)
    try:
        known = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    index, shards = {}, []
    for path in paths:
        stat = path.stat()
        key = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
        entry = known.get(path.name) if isinstance(known, dict) else None
        fresh = isinstance(entry, dict) and entry.get("key") == key
        samples = entry["samples"] if fresh else count(path)
        index[path.name] = {"key": key, "samples": samples}
        shards.append(Shard(path, samples))
    if index != known:
        write_index(file, index)
    return shards


def index_file(folder: Path, cache_dir: str | Path) -> Path:
    """`cache_dir/shards-<folder>-<hash of where the folder is>.json`: one per split folder."""
    where = hashlib.blake2b(str(folder.resolve()).encode(), digest_size=6).hexdigest()
    parent = folder.resolve()
    return Path(cache_dir).expanduser() / f"shards-{parent.parent.name}-{parent.name}-{where}.json"


def write_index(path: Path, index: dict[str, Any]) -> None:
    """Atomically (several processes may write it at once); a folder that cannot be
    written is said once and is no error."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(index, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        if str(path.parent) not in UNCACHED:  # said once, not for every split
            UNCACHED.add(str(path.parent))
            note(
                f"shard counts not cached ({path.parent}: {exc.strerror or exc}); they are "
                "counted again next run (data.cache_dir sets the folder)"
            )
        try:
            tmp.unlink(missing_ok=True)
        except OSError:  # a read-only file system: there is nothing to remove
            pass


def find_shards(root: Path, split: str, suffix: str) -> list[Path]:
    """The shards of a split: `root/split/*suffix`, in name order."""
    return sorted(path for path in (root / split).glob(f"*{suffix}") if path.is_file())


def jsonl_lines(path: Path, first: int) -> Iterator[tuple[str, bytes]]:
    """("file:line", line) of a JSONL shard's non-blank lines, from the `first` on; the
    lines before it are read but not parsed."""
    with open(path, "rb") as handle:
        kept = 0
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            if kept >= first:
                yield f"{path}:{number}", line
            kept += 1


def count_jsonl(path: Path) -> int:
    """The number of records (non-blank lines) of a JSONL shard."""
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


def json_object(where: str, line: bytes) -> dict[str, Any]:
    """One JSONL line as a dict; anything else is an error naming the file and line."""
    try:
        record = json.loads(line)
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not UTF-8 text; save the shard as UTF-8") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise ConfigError(f"{where}: not a JSON object")
    return record


def parquet_rows(path: Path, first: int) -> Iterator[dict[str, Any]]:
    """The rows of a Parquet shard as {column: value}, from the `first` on; row groups
    wholly before it are not read. Needs pyarrow."""
    shard = parquet_file(path)
    offset, groups = 0, []
    for group in range(shard.num_row_groups):
        rows = shard.metadata.row_group(group).num_rows
        if not groups and offset + rows <= first:
            offset += rows
            continue
        groups.append(group)
    for batch in parquet_batches(path, shard, row_groups=groups):
        rows = batch.to_pylist()
        yield from rows[max(first - offset, 0) :]
        offset += len(rows)


def parquet_batches(path: Path, shard: Any = None, **options: Any) -> Iterator[Any]:
    """The record batches of a Parquet shard (`ParquetFile.iter_batches` options); a shard
    damaged past its footer (a page that cannot be read) is one error naming it."""
    import pyarrow

    shard = shard if shard is not None else parquet_file(path)
    try:
        yield from shard.iter_batches(**options)
    except (pyarrow.ArrowException, OSError) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"{path}: a damaged Parquet shard ({reason}); copy it again") from None


def count_parquet(path: Path) -> int:
    """The number of rows of a Parquet shard (from its footer)."""
    return parquet_file(path).metadata.num_rows


def parquet_file(path: Path) -> Any:
    """The shard opened (its footer read); a damaged one is one error naming it."""
    import pyarrow
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pyarrow.ArrowInvalid, OSError) as exc:
        raise ConfigError(f"{path}: not a readable Parquet shard ({exc})") from None


def tar_samples(path: Path, first: int) -> Iterator[tuple[str, dict[str, bytes]]]:
    """("file:key", {extension: bytes}) of a tar shard in WebDataset layout (a sample is
    the consecutive files sharing a key: `0001.jpg`, `0001.cls`), from the `first` on;
    the tar is read as a stream and the files of samples before `first` are not kept."""
    for number, (key, files) in enumerate(tar_groups(path, first)):
        if number >= first:
            yield f"{path}:{key}", files


def ends_like_a_tar(path: Path, end: int) -> bool:
    """A whole tar has two zero blocks after its last member; a copy cut short between two
    members has not, and tarfile reads it to the cut without a word. (A compressed
    tar cut short fails in the decompressor.)"""
    with open(path, "rb") as handle:
        handle.seek(end)
        tail = handle.read(1024)
    return len(tail) == 1024 and not tail.strip(b"\0")


def count_tar(path: Path) -> int:
    """The number of samples (runs of files sharing a key) of a tar shard."""
    return sum(1 for _ in tar_groups(path, sys.maxsize))


def tar_groups(path: Path, first: int) -> Iterator[tuple[str, dict[str, bytes]]]:
    """(key, {extension: bytes}) for each run of files sharing a key, the bytes read only
    from group `first` on (in stream mode a file can only be read while it is the
    current member). The key is the path up to the first dot of the file name
    (`a/0001.seg.png`: key `a/0001`, extension `seg.png`). A broken tar is an error."""
    number, key, files = -1, None, {}
    try:
        with tarfile.open(path, "r|*") as tar:
            for member in tar:
                if not member.isfile():
                    continue
                folder, _, name = member.name.rpartition("/")
                stem, _, extension = name.partition(".")
                if f"{folder}/{stem}" != key:
                    if key is not None:
                        yield key.lstrip("/"), files
                    number, key, files = number + 1, f"{folder}/{stem}", {}
                if number >= first:
                    files[extension.lower()] = tar.extractfile(member).read()  # type: ignore[union-attr]
            plain, end = tar.fileobj.comptype == "tar", tar.offset  # type: ignore[union-attr]
    except (tarfile.TarError, EOFError) as exc:
        raise ConfigError(f"{path}: not a readable tar file ({exc})") from None
    if plain and not ends_like_a_tar(path, end):
        raise ConfigError(
            f"{path}: the tar file is cut short after {number + 1} samples (no end-of-archive "
            "blocks): copy it again"
        )
    if key is not None:
        yield key.lstrip("/"), files
