"""Labelled text files, read by the "text" and "hf-text" dataset kinds.

`root` is one .tsv, .csv or .jsonl file (then `val_fraction` of the rows is held out, the
same rows every run) or a folder with train.tsv|csv|jsonl and, optionally,
val.tsv|csv|jsonl and test.tsv|csv|jsonl. In a TSV or CSV file the first row names the
columns; in a JSONL file every line is one JSON object and the first one's keys name the
fields. The label is `label_column` (default: the last column), the text is "text"
(default: the first other column). TSV text is taken as it is (a quote is a character,
so one line is always one row); CSV follows the usual quoting. A line that is not UTF-8,
not valid JSON or short of fields is an error naming the file and line.

Files are read line by line (`iter_rows`), never whole. The word tokeniser (`tokenize`,
`build_vocab`) and `tokenise_files` live here too: they stream over the files once,
keeping only the counts of the training tokens, and write the token ids to disk as
arrays (`TokenArrays`: one flat int32 array, int64 offsets, int64 labels), cached and
memory-mapped on the next run (`cached_tokens`).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import glob
import hashlib
import inspect
import itertools
import json
import os
import re
import shutil
import tempfile
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from ..config import ConfigError
from . import hold_out, note
from ._raw import Raw, RawInputs
from ._sequences import Sequences, pad_collate

Rows = list[tuple[str, str]]  # (text, label) pairs
UNK_INDEX = 1
SPECIALS = ["<pad>", "<unk>"]  # 0 is _sequences.PAD_INDEX, 1 is UNK_INDEX
TOKEN = re.compile(r"\w+|[^\w\s]")
CHUNK = 1 << 20  # token ids written to disk at a time: what tokenising holds in memory


def tokenize(text: str) -> list[str]:
    """'Hello, World!' -> ['hello', ',', 'world', '!']"""
    return TOKEN.findall(text.lower())


def build_vocab(counts: Counter[str], max_size: int) -> list[str]:
    """Specials, then tokens by falling count (ties alphabetically): index = position.
    `counts`: the training texts' tokens, e.g. counts.update(tokenize(text)) per text."""
    ranked = sorted(counts, key=lambda token: (-counts[token], token))
    return SPECIALS + ranked[: max(max_size - len(SPECIALS), 0)]


def encode(text: str, index: dict[str, int], max_length: int) -> torch.Tensor:
    """Token ids (T,), 1 <= T <= max_length; an empty text becomes one unknown token."""
    ids = [index.get(token, UNK_INDEX) for token in tokenize(text)[:max_length]]
    return torch.tensor(ids or [UNK_INDEX], dtype=torch.long)


def text_lines(path: Path, newline: str) -> Iterator[str]:
    """The lines of a UTF-8 file, read in chunks (`newline` as for `open`); bytes that are
    not UTF-8 are an error naming the file and line."""
    try:
        # utf-8-sig: a byte-order mark (Excel's "CSV UTF-8") is not part of the first name
        with path.open(encoding="utf-8-sig", newline=newline) as file:
            yield from file
    except UnicodeDecodeError:
        raise not_utf8(path) from None


def not_utf8(path: Path) -> ConfigError:
    """The error for the first line of `path` that is not UTF-8 (found by a second read:
    the first one, by chunks, does not know its line)."""
    with path.open("rb") as file:
        for line, raw in enumerate(file, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                byte = f"byte 0x{raw[exc.start]:02x}"
                return ConfigError(f"{path}:{line}: not UTF-8 text ({byte}); save it as UTF-8")
    return ConfigError(f"{path}: not UTF-8 text; save it as UTF-8")


def read_delimited(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line, cells) of every row of a .tsv (tab-separated) or .csv file, header first.

    TSV text is taken as it is: a quote is a character, not a delimiter (so one line is
    always one row); CSV follows the usual quoting."""
    csv.field_size_limit(2**31 - 1)  # long documents are fine: max_length cuts them
    tsv = path.suffix.lower() in (".tsv", ".tab", ".txt")
    dialect = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if tsv else {"delimiter": ","}
    reader = csv.reader(text_lines(path, ""), **dialect)
    try:
        for row in reader:
            if row:
                yield reader.line_num, row
    except csv.Error as exc:
        raise ConfigError(f"{path}:{reader.line_num}: {exc}") from None


def json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """(line, object, None) for every line of a .jsonl file that is not blank, or (line,
    None, why it is not an object)."""
    # newline="\n": a JSON string may hold U+2028 and other line breaks
    for line, raw in enumerate(text_lines(path, "\n"), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            yield line, None, f"not valid JSON ({exc.msg})"
            continue
        if isinstance(record, dict):
            yield line, record, None
        else:
            yield line, None, "not a JSON object"


def read_jsonl(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line, cells) of a .jsonl file, one JSON object per line; the first object's keys
    come first, as the header. A missing field is an empty cell."""
    header = None
    for line, record, error in json_lines(path):
        if record is None:
            raise ConfigError(f"{path}:{line}: {error}")
        if header is None:
            header = list(record)
            yield 0, header
        yield line, [as_cell(record.get(key)) for key in header]


def as_cell(value: object) -> str:
    """A JSON value as a cell: strings as they are, null as empty, others as JSON (1, true)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def iter_rows(path: Path, label_column: str) -> Iterator[tuple[str, str]]:
    """(text, label) pairs from a .tsv, .csv or .jsonl file, one at a time."""
    if not path.is_file():
        raise FileNotFoundError(f"text file {path} does not exist")
    jsonl = path.suffix.lower() in (".jsonl", ".ndjson")
    rows = read_jsonl(path) if jsonl else read_delimited(path)
    header = [name.strip() for name in next(rows, (0, []))[1]]
    text, label = text_and_label(path, header, label_column) if header else (0, 0)
    empty = True
    for line, row in rows:
        if len(row) != len(header):
            raise ConfigError(f"{path}:{line}: {len(row)} fields, the header has {len(header)}")
        if not row[label].strip():
            raise ConfigError(f"{path}:{line}: the label ({header[label]}) is empty")
        yield row[text], row[label].strip()
        empty = False
    if empty:
        needs = "at least one JSON object" if jsonl else "a header row and at least one data row"
        raise ConfigError(f"{path} needs {needs}")


def text_and_label(path: Path, header: list[str], label_column: str) -> tuple[int, int]:
    """The positions of the text and label columns in `header`."""
    label = label_column or header[-1]
    if label not in header:
        raise ConfigError(f"{path} has no label column {label!r}; it has {', '.join(header)}")
    if not [name for name in header if name != label]:
        raise ConfigError(f"{path} has no text column besides the label {label!r}")
    return header.index(text_column(header, label_column)), header.index(label)


def text_column(header: list[str], label_column: str, text: str = "") -> str:
    """The text column of `header`: `text` when given, else "text", else the first column
    other than the label (`label_column`, or the last column). A file to predict may have
    no label column: then every column is a candidate."""
    label = label_column or header[-1]
    others = [name for name in header if name != label] or header
    for name in (text, "text"):
        if name and name in others:
            return name
    return others[0]


def read_rows(path: Path, label_column: str) -> Rows:
    """(text, label) pairs from a .tsv, .csv or .jsonl file."""
    return list(iter_rows(path, label_column))


def find_split(root: Path, split: str) -> Path | None:
    for suffix in (".tsv", ".csv", ".jsonl"):
        if (root / f"{split}{suffix}").is_file():
            return root / f"{split}{suffix}"
    return None


def split_files(root: str) -> tuple[Path, Path | None]:
    """The training file and the validation file (None: hold out rows of the training file)."""
    path = Path(root).expanduser()
    if not path.is_dir():
        return path, None
    train_path = find_split(path, "train")
    if train_path is None:
        raise FileNotFoundError(f"data.root {path} has no train.tsv, train.csv or train.jsonl")
    return train_path, find_split(path, "val")


def load_splits(root: str, label_column: str, val_fraction: float) -> tuple[Rows, Rows]:
    """Training and validation rows: train and val files, or `val_fraction` of one file's
    rows held out (the same rows every run)."""
    train_path, val_path = split_files(root)
    if val_path is not None:
        return read_rows(train_path, label_column), read_rows(val_path, label_column)
    rows = read_rows(train_path, label_column)
    train_index, val_index = hold_out(len(rows), val_fraction)
    return [rows[i] for i in train_index.tolist()], [rows[i] for i in val_index.tolist()]


@dataclass
class TokenArrays:
    """Tokenised rows of one file: row i's token ids are tokens[offsets[i]:offsets[i + 1]].

    Loaded from `folder` memory-mapped (the operating system pages them in as samples
    are read, and worker processes share them); `folder` None: held in memory."""

    tokens: np.ndarray  # (total,) int32, every row's ids one after another
    offsets: np.ndarray  # (rows + 1,) int64
    labels: np.ndarray  # (rows,) int64 class indices
    folder: Path | None = None
    name: str = ""

    @classmethod
    def load(cls, folder: Path, name: str, mmap: bool = True) -> TokenArrays:
        mode = "r" if mmap else None
        arrays = [np.load(folder / f"{name}.{part}.npy", mmap_mode=mode) for part in PARTS]
        return cls(*arrays, folder if mmap else None, name)

    def __reduce__(self) -> tuple[Any, ...]:
        # A worker started by spawn or forkserver maps the files again rather than
        # receiving a copy of every token.
        if self.folder is None:
            return TokenArrays, (self.tokens, self.offsets, self.labels)
        return TokenArrays.load, (self.folder, self.name)


PARTS = ("tokens", "offsets", "labels")


class TokenDataset(Dataset):
    """Samples {"inputs": (T,) int64 token ids, "targets": class index} sliced from
    TokenArrays; `rows` picks the split's rows, in its order."""

    held_in_memory = True  # memory-mapped token arrays: a batch is one gather (data.in_memory)

    def __init__(self, arrays: TokenArrays, rows: np.ndarray | None = None) -> None:
        self.arrays = arrays
        self.rows = np.arange(len(arrays.labels)) if rows is None else rows
        self.targets = torch.from_numpy(np.asarray(arrays.labels[self.rows]))  # (N,)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        row = self.rows[index]
        start, end = self.arrays.offsets[row], self.arrays.offsets[row + 1]
        tokens = self.arrays.tokens[start:end].astype(np.int64)  # (T,), a copy
        return {"inputs": torch.from_numpy(tokens), "targets": self.targets[index]}

    def __getitems__(self, indices: list[int] | torch.Tensor) -> Sequences:
        """A batch's samples in one gather from the token array (the DataLoader calls this
        instead of __getitem__ once a sample): their ids one after another."""
        rows = self.rows[np.asarray(indices, dtype=np.int64)]  # (B,)
        starts = self.arrays.offsets[rows]  # (B,)
        lengths = self.arrays.offsets[rows + 1] - starts  # (B,)
        # position k of the batch's ids: its sample's start + (k - where that sample begins)
        begins = np.cumsum(lengths) - lengths  # (B,)
        where = np.arange(int(lengths.sum())) + np.repeat(starts - begins, lengths)  # (L,)
        tokens = torch.from_numpy(self.arrays.tokens[where].astype(np.int64))  # (L,)
        targets = self.targets[torch.as_tensor(indices, dtype=torch.long)]  # (B,)
        return Sequences(tokens, torch.from_numpy(lengths.astype(np.int64)), targets)

    def lengths(self) -> list[int]:
        """Every sample's length, from the offsets alone (for length bucketing)."""
        offsets = self.arrays.offsets
        return (offsets[self.rows + 1] - offsets[self.rows]).tolist()


class StreamingTokenizer:
    """Tokenises files row by row in bounded memory.

    Token ids are numbered as tokens are first seen (0, 1: padding, unknown) and written
    to `folder` by chunks; what grows is the counts of the training rows' tokens (for the
    vocabulary), the table of tokens seen, and each row's length and label. `finish`
    renumbers the ids by the final vocabulary into TokenArrays files."""

    def __init__(self, tokenize: Callable[[str], list[str]], max_length: int, folder: Path):
        self.tokenize, self.max_length, self.folder = tokenize, max_length, folder
        specials = {token: i for i, token in enumerate(SPECIALS)}  # 0 and 1, as in vocabularies
        self.ids = defaultdict(itertools.count(len(specials)).__next__, specials)
        self.label_ids: defaultdict[str, int] = defaultdict(itertools.count().__next__)
        self.counts: Counter[str] = Counter()  # tokens of the training rows
        self.train_labels: set[str] = set()
        self.rows: dict[str, tuple[array, array]] = {}  # name -> (lengths, label ids)

    def add(self, name: str, rows: Iterable[tuple[str, str]], counted: Iterable[bool]) -> None:
        """Tokenise `rows` as the file `name`; `counted`: whether each is a training row."""
        ids, lengths, labels = array("i"), array("q"), array("q")
        with (self.folder / f"{name}.ids").open("wb") as out:
            for (text, label), train in zip(rows, counted, strict=False):  # counted may be endless
                tokens = self.tokenize(text)
                if train:
                    self.counts.update(tokens)  # the whole text, not only what is kept
                    self.train_labels.add(label)
                kept = tokens[: self.max_length] or SPECIALS[UNK_INDEX:]  # empty: unknown
                ids.extend(map(self.ids.__getitem__, kept))
                lengths.append(len(kept))
                labels.append(self.label_ids[label])
                if len(ids) >= CHUNK:
                    ids.tofile(out)
                    del ids[:]
            ids.tofile(out)
        self.rows[name] = lengths, labels

    def finish(self, vocab: list[str], classes: list[str]) -> None:
        """Write every file's TokenArrays (a label not in `classes` becomes -1)."""
        index = {token: i for i, token in enumerate(vocab)}
        table = np.array([index.get(t, UNK_INDEX) for t in self.ids], dtype=np.int32)
        classes_index = {label: i for i, label in enumerate(classes)}
        label_table = np.array([classes_index.get(y, -1) for y in self.label_ids], np.int64)
        for name, (lengths, label_ids) in self.rows.items():
            renumber(self.folder / f"{name}.ids", self.folder / f"{name}.tokens.npy", table)
            offsets = np.zeros(len(lengths) + 1, dtype=np.int64)  # (rows + 1,)
            np.cumsum(np.frombuffer(lengths, dtype=np.int64), out=offsets[1:])
            np.save(self.folder / f"{name}.offsets.npy", offsets)
            labels = label_table[np.frombuffer(label_ids, dtype=np.int64)]  # (rows,)
            np.save(self.folder / f"{name}.labels.npy", labels)

    def labels_of(self, name: str, rows: np.ndarray) -> set[str]:
        """The label names of some rows of the file `name`."""
        label_ids = np.frombuffer(self.rows[name][1], dtype=np.int64)[rows]
        names = list(self.label_ids)
        return {names[i] for i in np.unique(label_ids).tolist()}


def renumber(source: Path, target: Path, table: np.ndarray) -> None:
    """target (.npy) = table[the int32 ids in source], by chunks; source is removed."""
    count = source.stat().st_size // 4
    header = {"descr": np.lib.format.dtype_to_descr(table.dtype), "fortran_order": False}
    with source.open("rb") as ids, target.open("wb") as out:
        np.lib.format.write_array_header_1_0(out, {**header, "shape": (count,)})
        while (chunk := np.fromfile(ids, dtype=np.int32, count=CHUNK)).size:
            table[chunk].tofile(out)
    source.unlink()


@dataclass
class TokenSettings:
    """How labelled text files become token ids; all but cache_dir is in the cache key."""

    label_column: str
    max_length: int  # tokens kept per text
    vocab_size: int  # the vocabulary's size when it is built (no state given)
    val_fraction: float  # held out of a lone training file
    cache_dir: str  # empty: a .cache folder beside the data


def tokenised_splits(
    files: dict[str, Path],
    settings: TokenSettings,
    state: dict[str, Any] | None = None,
    tokenize: Callable[[str], list[str]] = tokenize,
) -> tuple[dict[str, TokenDataset], dict[str, Any]]:
    """TokenDatasets of the splits of `files` ("train" and "val"; "train" alone, of which
    val_fraction of the rows are held out; or "test") and the state they are encoded
    with, {"vocab", "classes"}: `state`, or built from the training rows when None.
    Reused from the cache while the files and settings are unchanged, else tokenised
    (one streaming read of each file, two of a lone training file) and cached."""
    for path in files.values():
        exists(path)
    key = {**dataclasses.asdict(settings), "cache_dir": None, "code": code_version(tokenize)}
    if list(files) != ["train"]:
        key["val_fraction"] = None
    keys = [{**key, "state": None}]  # the entry of a vocabulary built from these files
    if state is not None:  # or of this state, when it is another vocabulary
        keys.append({**key, "vocab_size": None, "state": digest(state)})
    for folder in (cache_folder(settings.cache_dir, files, k) for k in keys):
        cached = read_state(folder)
        if cached is not None and state in (None, cached):
            note(f"reusing the tokenised text cached in {folder}")
            return load_splits_arrays(folder, files, settings.val_fraction), cached
    return tokenise_into(folder, files, settings, state, tokenize)


def tokenise_into(
    folder: Path,
    files: dict[str, Path],
    settings: TokenSettings,
    state: dict[str, Any] | None,
    tokenize: Callable[[str], list[str]],
) -> tuple[dict[str, TokenDataset], dict[str, Any]]:
    """Tokenise into a new cache folder (in memory where it cannot be written)."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f"{folder.name}.tmp-", dir=folder.parent))
    except OSError as exc:
        note(f"no token cache ({folder.parent}: {exc.strerror}); data.cache_dir sets its place")
        with tempfile.TemporaryDirectory() as scratch:
            state = encode_files(Path(scratch), files, settings, state, tokenize)
            return load_splits_arrays(Path(scratch), files, settings.val_fraction, False), state
    try:
        work.chmod(0o755)  # mkdtemp's folder is private; the cache is for every user of the data
        state = encode_files(work, files, settings, state, tokenize)
        identity = [file_identity(path) for path in files.values()]
        (work / "meta.json").write_text(json.dumps({"files": identity, "state": state}))
        publish(work, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    note(f"tokenised text cached in {folder}")
    return load_splits_arrays(folder, files, settings.val_fraction), state


def encode_files(
    folder: Path,
    files: dict[str, Path],
    settings: TokenSettings,
    state: dict[str, Any] | None,
    tokenize: Callable[[str], list[str]],
) -> dict[str, Any]:
    """Write the TokenArrays of `files` into `folder`; returns the state used."""
    encoder = StreamingTokenizer(tokenize, settings.max_length, folder)
    held_out = list(files) == ["train"]
    if held_out:  # which rows are for training: one read to count them
        total = sum(1 for _ in iter_rows(files["train"], settings.label_column))
        counted = np.zeros(total, dtype=bool)
        counted[split_rows(files, {"train": total}, settings.val_fraction)["train"][1]] = True
    for name, path in files.items():
        train = iter(counted) if held_out else itertools.repeat(name == "train")
        encoder.add(name, iter_rows(path, settings.label_column), train)
    if state is None:
        vocab = build_vocab(encoder.counts, settings.vocab_size)
        state = {"vocab": vocab, "classes": sorted(encoder.train_labels)}  # the label names
    sizes = {name: len(lengths) for name, (lengths, _) in encoder.rows.items()}
    for split, (name, rows) in split_rows(files, sizes, settings.val_fraction).items():
        unknown = sorted(encoder.labels_of(name, rows) - set(state["classes"]))
        if unknown:
            raise ConfigError(
                f"{split} split has labels not seen in training: {', '.join(unknown)}"
            )
    encoder.finish(state["vocab"], state["classes"])
    return state


def split_rows(
    files: dict[str, Path], sizes: dict[str, int], val_fraction: float
) -> dict[str, tuple[str, np.ndarray]]:
    """split -> (its file, its rows in order): every file's rows, or for a lone training
    file, the training rows and val_fraction of them held out (the same every run)."""
    if list(files) == ["train"]:
        train, val = hold_out(sizes["train"], val_fraction)
        return {"train": ("train", train.numpy()), "val": ("train", val.numpy())}
    return {name: (name, np.arange(sizes[name])) for name in files}


def load_splits_arrays(
    folder: Path, files: dict[str, Path], val_fraction: float, mmap: bool = True
) -> dict[str, TokenDataset]:
    arrays = {name: TokenArrays.load(folder, name, mmap) for name in files}
    sizes = {name: len(a.labels) for name, a in arrays.items()}
    splits = split_rows(files, sizes, val_fraction).items()
    return {split: TokenDataset(arrays[name], rows) for split, (name, rows) in splits}


def exists(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"text file {path} does not exist")
    return path


def file_identity(path: Path) -> list[Any]:
    """What says a file changed: its resolved path, size and modification time (ns)."""
    stat = path.stat()
    return [str(path.resolve()), stat.st_size, stat.st_mtime_ns]


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def code_version(tokenize: Callable[[str], list[str]]) -> str:
    """A digest of this module's source and of the one defining `tokenize`: editing how
    text is tokenised never reuses tokens cached before."""
    sources = {Path(__file__), Path(inspect.getsourcefile(tokenize) or __file__)}
    return digest([path.read_text(encoding="utf-8") for path in sorted(sources)])


def cache_folder(cache_dir: str, files: dict[str, Path], key: dict[str, Any]) -> Path:
    """<cache_dir or .cache beside the data>/<first file's name>-<digest of the files'
    identities and the key>."""
    first = next(iter(files.values()))
    root = Path(cache_dir).expanduser() if cache_dir else first.parent / ".cache"
    return root / f"{first.name}-{digest([[file_identity(p) for p in files.values()], key])}"


def read_state(folder: Path) -> dict[str, Any] | None:
    """The state of a finished cache entry; None when there is none."""
    try:
        return json.loads((folder / "meta.json").read_text(encoding="utf-8"))["state"]
    except (OSError, ValueError, KeyError):
        return None


def publish(work: Path, folder: Path) -> None:
    """Move a finished entry into place (one rename: no reader sees half of one), and
    remove the entries of older versions of the same file."""
    try:
        os.rename(work, folder)
    except OSError:  # another process (a torchrun rank) was first; its entry is the same
        return
    mine = json.loads((folder / "meta.json").read_text(encoding="utf-8"))["files"][0]
    for other in folder.parent.glob(f"{glob.escape(folder.name[:-17])}-*"):
        try:
            theirs = json.loads((other / "meta.json").read_text(encoding="utf-8"))["files"][0]
        except (OSError, ValueError, KeyError, IndexError):
            continue
        if theirs[0] == mine[0] and theirs != mine:  # the same file, since changed
            shutil.rmtree(other, ignore_errors=True)


def text_inputs(sources: list[str], label_column: str = "", text_name: str = "") -> Iterator[Raw]:
    """The texts of `predict`'s inputs, read by the rules of training: a .tsv/.csv/.jsonl
    file by `read_delimited` and `json_lines` (blank lines skipped), its text column chosen
    by `text_column` (`label_column`: the training's data.target; a label column may be
    absent); any other file, one text per line (blank lines skipped). A file that cannot
    be read is one error; so is each bad row, and the others go on. `row` counts the rows
    read, from 1."""
    for source in sources:
        path = Path(source).expanduser()
        if not path.is_file():
            yield Raw(source, None, None, "no such file")
            continue
        suffix = path.suffix.lower()
        if suffix in (".jsonl", ".ndjson"):
            rows = jsonl_texts(source, path, label_column, text_name)
        elif suffix in (".tsv", ".tab", ".csv"):
            rows = delimited_texts(source, path, label_column, text_name)
        else:
            rows = line_texts(source, path)
        try:
            yield from rows
        except ConfigError as exc:  # not UTF-8, or a CSV quote never closed
            yield Raw(source, None, None, f"{exc}; the rest of the file is skipped")
        except OSError as exc:
            yield Raw(source, None, None, str(exc))


def line_texts(source: str, path: Path) -> Iterator[Raw]:
    lines = (line.rstrip("\r\n") for line in text_lines(path, ""))
    for row, line in enumerate((line for line in lines if line.strip()), start=1):
        yield Raw(source, row, line)


def delimited_texts(source: str, path: Path, label_column: str, text_name: str) -> Iterator[Raw]:
    rows = read_delimited(path)
    header = [name.strip() for name in next(rows, (0, []))[1]]
    if not header:
        yield Raw(source, None, None, "empty file: a header row is needed")
        return
    column = header.index(text_column(header, label_column, text_name))
    for row, (_, cells) in enumerate(rows, start=1):
        if len(cells) != len(header):
            yield Raw(source, row, None, f"{len(cells)} fields, the header has {len(header)}")
        else:
            yield Raw(source, row, cells[column])


def jsonl_texts(source: str, path: Path, label_column: str, text_name: str) -> Iterator[Raw]:
    key = None  # from the first object's keys, as in training
    for row, (_, record, error) in enumerate(json_lines(path), start=1):
        if record is None:
            yield Raw(source, row, None, error)
            continue
        key = key or text_column(list(record) or [text_name or "text"], label_column, text_name)
        value = record.get(key)
        if isinstance(value, str):
            yield Raw(source, row, value)
        else:
            yield Raw(source, row, None, f"no {key!r} string")


def word_inputs(
    vocab: list[str],
    max_length: int,
    fixed_length: bool,
    label_column: str = "",
    text_name: str = "",
) -> RawInputs:
    """Raw texts for `predict` (lines of a file, or a CSV/TSV/JSONL column), encoded with
    `vocab` exactly as the word-token kinds encode their samples; `fixed_length`: padded
    to `max_length` (else to the batch's longest text); `label_column` and `text_name`: the
    training's label and text columns (`text_inputs`)."""
    index = {token: i for i, token in enumerate(vocab)}

    def prepare(text: str) -> dict[str, torch.Tensor]:
        return {"inputs": encode(text, index, max_length)}  # (T,)

    steps = {
        "tokenize": {"lowercase": True, "pattern": TOKEN.pattern},  # re.findall(pattern, text)
        "vocab": vocab,  # token -> its index here; others -> unknown_index
        "unknown_index": UNK_INDEX,
        "empty_text": [UNK_INDEX],  # a text without tokens becomes one unknown token
        "max_length": max_length,  # longer texts are cut
        "pad": {"index": 0, "to": max_length if fixed_length else "the longest text of the batch"},
        "lengths": "tokens before padding",
        "padding_mask": "True where padded",
    }
    collate = functools.partial(pad_collate, length=max_length) if fixed_length else pad_collate
    read = functools.partial(text_inputs, label_column=label_column, text_name=text_name)
    return RawInputs(read, prepare, steps, collate)
