"""Reading tables for the csv dataset kind: CSV and Parquet files read by pyarrow into
one Arrow array per column, and the fitting and encoding steps that work on them.

The file is read by pyarrow, a block at a time, into one array per column (a number column
holds 8 bytes a cell, not a string). Fitting and encoding then work on BLOCK_ROWS rows at a
time, and each column is let go once encoded into the model inputs, one float32 (N, F)
tensor: a 183 MB CSV of 2M rows of numbers trains at a peak under 3x its size, torch
included, not the 18x that lists of strings took.

A dataset module (data/<name>.py, yours) decides the columns, their kinds and the targets
and calls these; this module is ptgen's: `ptgen update` brings its improvements.
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import math
import mmap
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import torch

from ..config import ConfigError
from . import read_text
from ._raw import Raw

# cells that mean "missing" when a caller gives none (the csv kind's data.na_values)
NA_VALUES = ("", "NA", "N/A", "NaN", "nan", "null", "NULL", "?")
BLOCK_ROWS = 1 << 16  # rows worked on at a time: a column's temporaries stay < 1 MB each
# pyarrow's message for a cell its column's type cannot hold ("Row #N: " on one thread)
CONVERSION_ERROR = r"In CSV column #(\d+): (?:Row #\d+: )?CSV conversion error to (\w+)"
# bytes pyarrow parses at a time: at 2M rows 512 KB takes ~10% less CPU than 256 KB at the
# same peak memory; 1 MB, no less CPU and a peak 20-40 MB higher (pyarrow's read-ahead)
CSV_BLOCK = 1 << 19


@dataclass
class Table:
    """Rows of a table file: `columns` holds all the file's rows, one Arrow array per column
    (numbers where every cell is one, else text), and `index` which of them, in order. The
    subsets of one file share `columns`, `numbers` and `codes`."""

    path: Path
    header: list[str]
    columns: dict[str, pa.ChunkedArray]
    # (N,) rows of `columns` (int32 if they fit), a slice of consecutive ones, or None: all
    index: np.ndarray | slice | None = None
    # the number columns as float64 arrays (missing: NaN), in the memory of their `columns`
    numbers: dict[str, np.ndarray] = field(default_factory=dict)
    codes: dict[str, tuple[np.ndarray, list[str]]] = field(default_factory=dict)  # label_codes
    rows: int = field(init=False)  # len(): also once encoding has let columns go

    def __post_init__(self) -> None:
        if self.index is None:
            self.rows = len(self.columns[self.header[0]])
        elif isinstance(self.index, slice):
            self.rows = self.index.stop - self.index.start
        else:
            self.rows = len(self.index)

    def __len__(self) -> int:
        return self.rows

    def column(self, name: str) -> pa.ChunkedArray:
        """One column of the rows, gathered only now: a subset costs one index array."""
        column = self.columns[name]
        if isinstance(self.index, slice):
            return column.slice(self.index.start, self.rows)  # no copy
        return column if self.index is None else column.take(self.index)

    def values(self, name: str) -> torch.Tensor:
        """(N,) float64: a number column's cells of the rows (missing: NaN), a new tensor."""
        numbers = torch.from_numpy(self.numbers[name])  # (all rows,)
        if isinstance(self.index, np.ndarray):
            return numbers.index_select(0, torch.from_numpy(self.index))
        return (numbers if self.index is None else numbers[self.index]).clone()

    def whole(self) -> Table:
        """All the rows of the file."""
        return Table(self.path, self.header, self.columns, None, self.numbers, self.codes)

    def rows_of(self, x: torch.Tensor) -> torch.Tensor:
        """The rows' rows of a tensor over all the file's rows (a new one for a subset;
        numpy's take: twice as fast as torch's index_select for rows of a few floats)."""
        if isinstance(self.index, np.ndarray):
            return torch.from_numpy(np.take(x.numpy(), self.index, axis=0))
        return x if self.index is None else x[self.index].clone()

    def of(self, values: np.ndarray) -> np.ndarray:
        """The rows' entries of an array over all the file's rows (a slice's: a view)."""
        return values if self.index is None else values[self.index]

    def subset(self, keep: Iterable[int] | torch.Tensor | slice) -> Table:
        """The rows at positions `keep` of these rows; a slice of them costs no index array."""
        start = self.index.start if isinstance(self.index, slice) else 0
        if isinstance(keep, slice):  # consecutive rows
            if isinstance(self.index, np.ndarray):
                index = self.index[keep]  # a view
            else:
                index = slice(start + keep.start, start + keep.stop)
        else:
            rows = np.asarray(keep)  # (M,)
            index = self.index[rows] if isinstance(self.index, np.ndarray) else rows + start
            if len(index) and int(index.max()) < 2**31:
                index = index.astype(np.int32)  # half the memory of int64
        return Table(self.path, self.header, self.columns, index, self.numbers, self.codes)

    def blocks(self) -> Iterator[tuple[int, Table]]:
        """The rows BLOCK_ROWS at a time, each with the position of its first row."""
        for start in range(0, len(self), BLOCK_ROWS):
            yield start, self.subset(slice(start, min(start + BLOCK_ROWS, len(self))))
            release_memory()  # the block's temporaries, before the next block's

    def where(self, row: int) -> str:
        """ "file:line" of one row, for messages (a CSV file is read again to count lines)."""
        if isinstance(self.index, np.ndarray):
            position = int(self.index[row])
        else:
            position = row + (self.index.start if isinstance(self.index, slice) else 0)
        if self.path.suffix.lower() != ".csv":
            return f"{self.path} (row {position + 1})"
        return f"{self.path}:{next(itertools.islice(csv_lines(self.path), position, None))}"


def read_table(
    path: Path, na_values: Iterable[str] = (), text: Iterable[str] = (), ignore: Iterable[str] = ()
) -> Table:
    """A CSV file with a header row (every row as many cells as the header) or a Parquet
    file. Cells in `na_values` are read as missing (null); the `text` columns are read as
    text even where they hold numbers (categories and class names as written). The `ignore`
    columns of a Parquet file may hold cells of any type (struct, list): they are read as
    missing cells; such a column not ignored is an error naming it."""
    na_values = list(na_values or NA_VALUES)
    parquet = path.suffix.lower() == ".parquet"
    if not path.is_file():
        raise FileNotFoundError(f"{'Parquet' if parquet else 'CSV'} file {path} does not exist")
    header = parquet_header(path) if parquet else csv_header(path)
    names = [name.strip() for name in header]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ConfigError(f"{path}: column names must be unique; repeated: {', '.join(twice)}")
    if not parquet:
        check_delimiter(path, names)
    text = {raw for raw, name in zip(header, names, strict=True) if name in text}
    ignore = {raw for raw, name in zip(header, names, strict=True) if name in set(ignore)}
    if parquet:
        columns, numbers = read_parquet(path, text, ignore)
    else:
        columns, numbers = read_csv(path, header, na_values, text)
    release_memory()  # the parser's buffers
    if len(columns[0]) == 0:
        raise ConfigError(f"{path} needs a header row and at least one data row")
    named = {
        name: values for name, values in zip(names, numbers, strict=True) if values is not None
    }
    return Table(path, names, dict(zip(names, columns, strict=True)), numbers=named)


def check_delimiter(path: Path, names: list[str]) -> None:
    """A header of one column that holds ';', tab or '|' between names: the file is not
    comma-separated (and would be read as one column, with nothing to learn from)."""
    if len(names) != 1:
        return
    for delimiter, called in ((";", "semicolons"), ("\t", "tabs"), ("|", "'|'")):
        if len(names[0].split(delimiter)) > 1:
            raise ConfigError(
                f"{path}: the header is one column {names[0]!r}: the file looks separated by "
                f"{called}, not commas; save it comma-separated (e.g. pandas: "
                f"pd.read_csv(path, sep={delimiter!r}).to_csv(path, index=False))"
            )


def release_memory() -> None:
    """Arrow's freed buffers back to the system: its allocator keeps them for reuse, tens
    of MB at a time, which would add to the peak of the steps that follow."""
    pa.default_memory_pool().release_unused()


def csv_header(path: Path) -> list[str]:
    """The first row with a cell that is not blank."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            for row in csv.reader(handle):
                if any(cell.strip() for cell in row):
                    return row
    except (UnicodeDecodeError, csv.Error) as exc:
        raise csv_error(path, exc) from None
    raise ConfigError(f"{path} needs a header row and at least one data row")


def read_csv(
    path: Path, header: list[str], na_values: list[str], text: set[str]
) -> tuple[list[pa.ChunkedArray], list[np.ndarray | None]]:
    """The columns of a CSV file, parsed by pyarrow a block at a time (see `gather`). Each
    column's type is guessed from the first block, then the file is read with those types
    given (pyarrow parses ~25% faster than while it guesses); when a later cell does not
    fit, the file is read again with that column wider (integers, then floats, then text)."""
    types = {name: pa.string() for name in text}
    size = path.stat().st_size
    parse = pa_csv.ParseOptions(newlines_in_values=True, invalid_row_handler=skip_blank_rows)
    blocks = pa_csv.ReadOptions(block_size=CSV_BLOCK)

    def expect(first: int) -> int:  # the rows: the first block's, times the blocks, +25%
        return first * (5 * size // CSV_BLOCK + 4) // 4

    while True:
        convert = pa_csv.ConvertOptions(  # anew each time: it copies `types`, widened below
            column_types=types,
            null_values=na_values,
            strings_can_be_null=True,
            quoted_strings_can_be_null=True,
        )
        held = sys.getrefcount(skip_blank_rows)
        try:
            reader = pa_csv.open_csv(path, blocks, parse, convert)
            try:
                guessed = {f.name: f.type for f in reader.schema if f.name not in types}
                if guessed:  # from the first block: read again with the types given
                    types.update(guessed)
                    continue
                columns, numbers, odd = gather(reader, reader.schema, expect)
            finally:  # stops its read-ahead thread, also after an error (else: abort at exit)
                reader.close()
        except pa.ArrowInvalid as exc:
            found = re.match(CONVERSION_ERROR, str(exc))
            if found is None or found[2] == "string":
                let_go(skip_blank_rows, held)  # the error may end the process right away
                raise csv_error(path, exc) from None
            wider = pa.float64() if found[2] in ("null", "int64") else pa.string()
            types[header[int(found[1])]] = wider
            continue
        if not odd:
            return columns, numbers
        types.update({name: pa.string() for name in odd})  # dates, true/false, inf: as written


def let_go(handler: Any, references: int) -> None:
    """Waits (up to 5 s) until pyarrow's read-ahead thread has dropped the references to
    `handler` it took after a failed read (~1 ms): a process that ends while that thread
    still holds a Python callback can crash on the way out (measured: 3 of 480 refused
    files on a loaded machine; 0 of 640 with this wait)."""
    deadline = time.monotonic() + 5
    while sys.getrefcount(handler) > references and time.monotonic() < deadline:
        time.sleep(0.001)


def gather(
    batches: Iterable[pa.RecordBatch], schema: pa.Schema, expect: Callable[[int], int]
) -> tuple[list[pa.ChunkedArray], list[np.ndarray | None], list[str]]:
    """The columns of a file read a batch at a time, each number column also as its float64
    array (missing: NaN; None for text), and the names of those to read again as text
    (dates, true/false, "inf": cells that are not finite numbers). A number column is
    written in place into an anonymous memory map of `expect(n)` cells, n the first batch's
    rows (one that falls short is copied into a map twice the size): the pages past the
    end are never written and cost nothing, and the whole map goes back to the system when
    the column is let go (memory freed inside a heap may stay with the process)."""
    numbers: dict[str, np.ndarray] = {}  # (capacity,) each
    text: dict[str, list[pa.Array]] = {f.name: [] for f in schema if pa.types.is_string(f.type)}
    odd, n = set(), 0
    for batch in batches:
        end = n + batch.num_rows
        for name, cells in zip(schema.names, batch.columns, strict=True):
            if name in text:
                text[name].append(cells)
                continue
            if name not in numbers:
                numbers[name] = memory_map(max(expect(batch.num_rows), end))
            elif end > len(numbers[name]):
                numbers[name] = memory_map(max(2 * len(numbers[name]), end), numbers[name][:n])
            if not write_numbers(cells, numbers[name][n:end]):
                odd.add(name)
        n = end
    columns, arrays = [], []
    for name in schema.names:
        if name in text:
            cells = pa.concat_arrays(text[name]) if text[name] else pa.array([], pa.string())
            columns.append(pa.chunked_array([cells]))
            arrays.append(None)
        else:
            values = numbers[name][:n] if name in numbers else np.empty(0)
            columns.append(pa.chunked_array([arrow_numbers(values)]))
            arrays.append(values)
    return columns, arrays, sorted(odd)


# private pages fault in faster than shared ones (~25%); Windows has neither
PRIVATE = {"flags": mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS} if hasattr(mmap, "MAP_PRIVATE") else {}


def memory_map(rows: int, start: np.ndarray | None = None) -> np.ndarray:
    """(rows,) float64 in an anonymous memory map, beginning with `start`'s values."""
    values = np.frombuffer(mmap.mmap(-1, 8 * max(rows, 1), **PRIVATE), np.float64)[:rows]
    if start is not None:
        values[: len(start)] = start
    return values


NUMPY_TYPES = {
    getattr(pa, name)(): np.dtype(name)
    for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    + ("float16", "float32", "float64")
}


def write_numbers(cells: pa.Array, out: np.ndarray) -> bool:
    """Writes a batch's cells of a number column into `out` (missing: NaN); False when
    one is not what `to_number` makes of a cell: pyarrow also reads "inf", true/false and
    dates."""
    if pa.types.is_null(cells.type):
        out[:] = np.nan
        return True
    if cells.type not in NUMPY_TYPES:
        return False
    values, present = arrow_values(cells)
    out[:] = values
    if present is not True:
        out[~present] = np.nan
    finite = np.count_nonzero(np.isfinite(out))
    return not pa.types.is_floating(cells.type) or finite == len(cells) - cells.null_count


def arrow_numbers(values: np.ndarray) -> pa.Array:
    """A float64 array as an Arrow array, NaN as missing, on the same memory (pyarrow's
    from_pandas would import pandas)."""
    missing = np.isnan(values)
    count = int(np.count_nonzero(missing))
    valid = pa.py_buffer(np.packbits(~missing, bitorder="little")) if count else None
    return pa.Array.from_buffers(pa.float64(), len(values), [valid, pa.py_buffer(values)], count)


def skip_blank_rows(row: Any) -> str:
    """pyarrow's verdict on a row without the header's number of cells: a row of blank cells
    is skipped, as csv.reader would be asked to; any other one is an error."""
    return "skip" if not row.text.replace(",", "").replace('"', "").strip() else "error"


def csv_lines(path: Path) -> Iterator[int]:
    """The file line of each data row, counted as pyarrow counts rows (blank ones skipped)."""
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        rows = (row for row in reader if any(cell.strip() for cell in row))
        width = len(next(rows))
        rows = (row for row in reader if row and (len(row) == width or any(c.strip() for c in row)))
        yield from (reader.line_num for _ in rows)


def csv_error(path: Path, exc: Exception) -> ConfigError:
    """The first row pyarrow could not read, named by file and line (as csv.reader counts
    lines); the file is read again, the slow way, only to find it."""
    read_text(path)  # raises the error naming the line of the first byte that is not UTF-8
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        try:
            rows = ((reader.line_num, row) for row in reader if any(c.strip() for c in row))
            _, header = next(rows, (0, []))
            for line, row in rows:
                if len(row) != len(header):
                    return ConfigError(
                        f"{path}:{line}: {len(row)} cells, the header has {len(header)}"
                    )
        except csv.Error as error:
            return ConfigError(f"{path}:{reader.line_num}: {error}")
    return ConfigError(f"{path}: {str(exc).splitlines()[0]}")


def parquet_header(path: Path) -> list[str]:
    import pyarrow.parquet as pq  # here: a CSV reader need not load it (~0.1 s, 4-14 MB)

    try:
        return pq.read_schema(path).names
    except (pa.ArrowException, OSError) as exc:
        raise ConfigError(f"{path}: not a Parquet file pyarrow can read ({exc})") from None


def read_parquet(
    path: Path, text: set[str], ignore: set[str] = frozenset()
) -> tuple[list[pa.ChunkedArray], list[np.ndarray | None]]:
    """The columns of a Parquet file, a batch at a time, NaN as missing like null; columns
    of other types than numbers and text (dates, true/false), and the `text` ones, as text.
    A column of nested cells (struct, list, map) is an error unless it is in `ignore`; then
    its cells are read as missing."""
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)  # (parquet_header has read its footer)
    schema = parquet.schema_arrow
    nested = {f.name: f.type for f in schema if pa.types.is_nested(f.type)}
    for name, kind in nested.items():
        if name not in ignore:
            raise ConfigError(
                f"{path}: column {name.strip()!r} holds {kind} cells, which cannot be read as "
                f"numbers or categories; leave it out: --set data.ignore={name.strip()}"
            )
    text = text | {f.name for f in schema if not reads_as_numbers(pa.array([], f.type))}
    while True:
        fields = [pa.field(f.name, pa.string() if f.name in text else f.type) for f in schema]
        batches = (as_text(batch, text, set(nested)) for batch in parquet.iter_batches(1 << 16))
        columns, numbers, odd = gather(
            batches, pa.schema(fields), lambda _: parquet.metadata.num_rows
        )
        if not odd:
            return columns, numbers
        text |= set(odd)  # "inf" as written


def as_text(
    batch: pa.RecordBatch, names: set[str], empty: set[str] = frozenset()
) -> pa.RecordBatch:
    """The batch with the `names` columns as text (NaN cells missing), the `empty` ones as
    missing cells."""
    columns = []
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        if name in empty:
            column = pa.nulls(len(column), pa.string())
        elif name in names and pa.types.is_floating(column.type):
            column = pc.if_else(pc.is_nan(column), None, column)
        columns.append(pc.cast(column, pa.string()) if name in names else column)
    return pa.RecordBatch.from_arrays(columns, batch.schema.names)


def reads_as_numbers(column: pa.Array | pa.ChunkedArray) -> bool:
    """Whether a column's cells are what `to_number` makes of them: text, integers, finite
    floats. pyarrow reads "inf", true/false and dates too; those are kept as text."""
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_integer(kind) or pa.types.is_null(kind):
        return True
    return pa.types.is_floating(kind) and pc.all(pc.is_finite(column)).as_py() is not False


def is_numbers(column: pa.ChunkedArray) -> bool:
    return not pa.types.is_string(column.type)


def to_number(cell: str) -> float | None:
    """The cell as a finite number, or None."""
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def text_cells(column: pa.ChunkedArray, na_values: Iterable[str] = ()) -> pa.ChunkedArray:
    """A column's cells as stripped text; missing ones (null, or in `na_values`) are null."""
    text = pc.utf8_trim_whitespace(pc.cast(column, pa.string()))
    if not na_values:
        return text
    missing = pc.is_in(text, value_set=pa.array(list(na_values), pa.string()))
    return pc.if_else(missing, None, text)


def as_numbers(
    column: pa.ChunkedArray, na_values: Iterable[str]
) -> tuple[pa.ChunkedArray, list[str]]:
    """The column as float64 (missing cells null) and its cells that are not numbers (to
    the letter of Python's float(): each distinct cell is read once)."""
    if is_numbers(column):
        return pc.cast(column, pa.float64()), []
    text = text_cells(column, na_values)
    distinct = pc.unique(text).drop_null()
    numbers = [to_number(cell) for cell in distinct.to_pylist()]
    bad = [
        cell for cell, number in zip(distinct.to_pylist(), numbers, strict=True) if number is None
    ]
    values = pc.take(pa.array(numbers, pa.float64()), pc.index_in(text, value_set=distinct))
    return values, bad


def first_row(column: pa.ChunkedArray, cells: list[str]) -> tuple[int, str]:
    """The first row holding one of `cells` (stripped), and that cell."""
    text = text_cells(column)
    row = int(np.argmax(pc.is_in(text, value_set=pa.array(cells)).to_numpy(zero_copy_only=False)))
    return row, text[row].as_py()


def is_missing(column: pa.ChunkedArray, na_values: Iterable[str]) -> np.ndarray:
    """(N,) True where a cell is missing."""
    cells = column if is_numbers(column) else text_cells(column, na_values)
    return cells.is_null().to_numpy(zero_copy_only=False)


def missing_cells(table: Table, name: str, na_values: Iterable[str]) -> np.ndarray:
    """(N,) True where a cell of the column is missing in the rows, a block at a time."""
    if name in table.numbers:
        return np.isnan(table.of(table.numbers[name]))
    return np.concatenate([is_missing(part.column(name), na_values) for _, part in table.blocks()])


def label_codes(table: Table, name: str) -> tuple[np.ndarray, list[str]]:
    """A text column's distinct cells (stripped), and the code of each of the file's rows
    among them, (rows,) int32 (-1: missing): worked out once, over the file's rows a block
    at a time (no row is gathered; only the distinct cells are stripped), for all its
    subsets."""
    if name not in table.codes:
        column = table.columns[name]
        blocks = [column.slice(start, BLOCK_ROWS) for start in range(0, len(column), BLOCK_ROWS)]
        found = pa.chunked_array([pc.unique(block) for block in blocks], column.type)
        cells = pc.unique(found).drop_null()  # (C,) as written
        stripped = text_cells(cells)  # (C,)
        labels = pc.unique(stripped)  # (K,)
        lookup = np.append(arrow_values(pc.index_in(stripped, value_set=labels))[0], -1)
        codes, done = np.empty(len(column), np.int32), 0
        for block in blocks:
            for chunk in pc.index_in(block, value_set=cells).chunks:
                index, present = arrow_values(chunk)  # (n,) into `cells`
                codes[done : done + len(chunk)] = lookup[np.where(present, index, -1)]
                done += len(chunk)
        release_memory()
        table.codes[name] = codes, labels.to_pylist()
    return table.codes[name]


def arrow_values(cells: pa.Array) -> tuple[np.ndarray, np.ndarray | bool]:
    """A fixed-width Arrow array's values (a view of its buffer: any value where missing)
    and where they are present (True: everywhere), read from its buffers: pyarrow's own
    to_numpy imports pandas where it is installed (~0.25 s)."""
    kind = NUMPY_TYPES[cells.type]
    if len(cells) == 0:
        return np.empty(0, kind), True
    validity, data = cells.buffers()[:2]
    values = np.frombuffer(data, kind, len(cells), cells.offset * kind.itemsize)
    if not cells.null_count:
        return values, True
    bits = np.frombuffer(validity, np.uint8)
    present = np.unpackbits(bits, count=cells.offset + len(cells), bitorder="little")
    return values, present[cells.offset :].view(bool)


def to_tensor(values: pa.ChunkedArray) -> torch.Tensor:
    """A column without nulls as a tensor, copied only where Arrow's buffer is read-only."""
    return torch.from_numpy(np.require(values.to_numpy(zero_copy_only=False), requirements="W"))


def require_columns(table: Table, names: list[str], what: str) -> None:
    missing = [name for name in names if name not in table.header]
    if missing:
        raise ConfigError(
            f"{table.path}: no column {', '.join(map(repr, missing))} ({what}); "
            f"its columns are {', '.join(table.header)}"
        )


def split_file(root: Path, split: str) -> Path:
    """root/<split>.parquet when the folder holds train.parquet, else root/<split>.csv."""
    suffix = ".parquet" if (root / "train.parquet").is_file() else ".csv"
    return root / f"{split}{suffix}"


def table_header(path: Path) -> list[str]:
    """The column names of a table file ([] for none: read_table then says why)."""
    if path.suffix.lower() == ".parquet" and path.is_file():
        return [name.strip() for name in parquet_header(path)]
    return csv_header(path) if path.is_file() else []


def fit_numeric(blocks: Iterable[torch.Tensor], name: str) -> dict[str, Any] | None:
    """A numeric column's mean and std (torch float64 over the present values, in row
    order) from its values (float64, missing: NaN) a block of rows at a time; None when the
    column has one value and no missing cell, or none at all."""
    missing, low, high, parts = False, math.inf, -math.inf, []
    for values in blocks:
        absent = values.isnan()  # (n,)
        present = values[~absent] if bool(absent.any()) else values  # (m,)
        missing |= len(present) < len(values)
        if len(present) == 0:
            continue
        low, high = min(low, float(present.min())), max(high, float(present.max()))
        parts.append(moments(present))
    if not parts or (low == high and not missing):
        return None
    mean, std = pooled(parts)
    return {"name": name, "missing": missing, "kind": "numeric", "mean": mean, "std": std}


def moments(numbers: torch.Tensor) -> tuple[int, float, float]:
    """Count, mean and variance (n - 1; 0 for one value) of a block of float64 values."""
    return len(numbers), float(numbers.mean()), float(numbers.var()) if len(numbers) > 1 else 0.0


def pooled(parts: list[tuple[int, float, float]]) -> tuple[float, float]:
    """The mean and std (n - 1; 1 where it is 0: a constant) of the union of blocks, from
    each block's `moments` (Chan et al.'s update); one block's own numbers unchanged."""
    count, mean, variance = parts[0]
    if len(parts) > 1:
        count, mean, squares = 0, 0.0, 0.0  # squares: the sum of squared deviations
        for n, block_mean, block_variance in parts:
            delta, total = block_mean - mean, count + n
            mean += delta * n / total
            squares += block_variance * (n - 1) + delta * delta * count * n / total
            count = total
        variance = squares / (count - 1)
    std = math.sqrt(variance)
    return mean, std if std > 0 else 1.0


def category_counts(column: pa.ChunkedArray, na_values: Iterable[str]) -> Counter[str]:
    """How often each present cell (stripped) occurs."""
    counted = pc.value_counts(text_cells(column, na_values).drop_null()).to_pylist()
    return Counter({item["values"]: item["counts"] for item in counted})


def numeric_values(table: Table, name: str, na: list[str]) -> torch.Tensor:
    """(N,) float64, missing: NaN: a numeric column's values in the rows (a new tensor); a
    cell that is not a number is an error naming its line."""
    if name in table.numbers:
        return table.values(name)
    cells = table.column(name)
    values, bad = as_numbers(cells, na)  # (N,) float64, missing: null
    if bad:
        row, cell = first_row(cells, bad)
        raise ConfigError(
            f"{table.where(row)}: column {name!r} is not a number ({cell!r}); "
            "it is numeric in the training split"
        )
    return to_tensor(pc.fill_null(values, math.nan))


def encode_numeric(values: torch.Tensor, column: dict[str, Any], out: torch.Tensor) -> None:
    """Writes into `out` (1 or 2, N) the standardised values (N,) (float64, missing: NaN;
    changed in place: no copies) and the missing indicator."""
    missing = values.isnan()  # (N,)
    out[0] = values.masked_fill_(missing, column["mean"]).sub_(column["mean"]).div_(column["std"])
    if column["missing"]:
        out[1] = missing


def encode_categorical(
    cells: pa.ChunkedArray, column: dict[str, Any], na: list[str], out: torch.Tensor
) -> None:
    """Writes into `out` (K, N) the one-hot over the K known categories (unknown: all
    zeros), or (K + 1, N) with the missing indicator when training had missing cells."""
    text = text_cells(cells, na)
    known = pa.array(column["categories"], pa.string())
    codes = pc.fill_null(pc.index_in(text, value_set=known), -1).to_numpy()  # (N,) -1: unknown
    rows = np.flatnonzero(codes >= 0)
    out.zero_()
    out[torch.from_numpy(codes[rows]), torch.from_numpy(rows)] = 1.0
    if column["missing"]:
        out[-1] = to_tensor(text.is_null())


def encode_splits(
    tables: list[Table], schema: dict[str, Any], release: bool = True
) -> list[torch.Tensor]:
    """The model inputs (N, F) of each table. Subsets of one file (the held-out splits)
    are encoded together over the file's rows, in its order (no column is gathered a row
    at a time), and each takes its rows of that (N, F) tensor, 4F bytes a row; unless a
    numeric column is text in some table: then each table is encoded in its own order (so
    an error names the same bad cell as ever). With `release` each column is let go (from
    every table sharing it) once encoded, so memory holds the file's columns or the
    inputs, hardly both."""
    names = [column["name"] for column in schema["columns"]]
    for table in tables:
        require_columns(table, names, "used in training")
    numeric = [column["name"] for column in schema["columns"] if column["kind"] == "numeric"]
    if any(name not in table.numbers for table in tables for name in numeric):
        return encode_columns(tables, schema, release)
    files = {id(table.columns): table.whole() for table in tables}  # one Table per file
    encoded = dict(zip(files, encode_columns(list(files.values()), schema, release), strict=True))
    return [table.rows_of(encoded[id(table.columns)]) for table in tables]


def encode_columns(
    tables: list[Table], schema: dict[str, Any], release: bool
) -> list[torch.Tensor]:
    """The model inputs (N, F) of each table, encoded column by column into a (F, N) tensor
    (a column's features are rows: pages are written as they are needed) and transposed at
    the end; with `release` each column is let go once encoded."""
    na = list(schema["na_values"])
    widths = [feature_width(column) for column in schema["columns"]]
    inputs = [torch.empty(sum(widths), len(table)) for table in tables]  # (F, N) each
    for i, column in enumerate(schema["columns"]):
        for table, x in zip(tables, inputs, strict=True):
            encode_column(table, column, na, x.split(widths)[i])  # (width, N)
        if release:
            for table in tables:
                table.columns.pop(column["name"], None)
                table.numbers.pop(column["name"], None)
            release_memory()
    for i, x in enumerate(inputs):  # each (F, N) tensor goes once transposed (numpy: 3x
        inputs[i] = torch.from_numpy(np.ascontiguousarray(x.numpy().T))  # faster) (N, F)
    return inputs


def encode_column(table: Table, column: dict[str, Any], na: list[str], out: torch.Tensor) -> None:
    """Writes one column's features of the table's rows into `out` (width, N), a block of
    rows at a time (the temporaries of a block, not of the whole column)."""
    for start, part in table.blocks():
        block = out[:, start : start + len(part)]
        if column["kind"] == "numeric":
            encode_numeric(numeric_values(part, column["name"], na), column, block)
        else:
            encode_categorical(part.column(column["name"]), column, na, block)


def feature_width(column: dict[str, Any]) -> int:
    """How many model inputs a column becomes."""
    values = 1 if column["kind"] == "numeric" else len(column["categories"])
    return values + int(column["missing"])


def feature_names(schema: dict[str, Any]) -> list[str]:
    """The name of each input feature, in order: "age", "age (missing)", "island=Dream"."""
    names = []
    for column in schema["columns"]:
        if column["kind"] == "numeric":
            names.append(column["name"])
        else:
            names += [f"{column['name']}={category}" for category in column["categories"]]
        names += [f"{column['name']} (missing)"] if column["missing"] else []
    return names


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch on one thread while a table is read and encoded: its blocks of 65k cells are
    too small for a second thread to pay (the same time on idle cores), and on busy cores
    each parallel region waits for a thread the system has not scheduled (measured on 2
    shared cores: a block's var() 5.6 ms on 2 threads, 0.05 ms on one; the 2M-row file's
    fit and encoding 9.5-12 s against 3.3 s)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def table_rows(sources: list[str], names: list[str], na_values: list[str]) -> Iterator[Raw]:
    """The rows of CSV or Parquet files, read by `read_table` as training reads them (a
    BOM, quoted line breaks, cells of any size), each as its cells of `names` in that order
    (text; None: missing). Other columns (the target, say) are ignored. A file that cannot
    be read, or lacks some of the columns, is one error."""
    for source in sources:
        path = Path(source).expanduser()
        if not path.is_file():
            yield Raw(source, None, None, "no such file")
            continue
        try:
            others = [name for name in table_header(path) if name not in names]
            table = read_table(path, na_values, names, others)
        except (ConfigError, OSError, pa.ArrowException) as exc:
            yield Raw(source, None, None, str(exc).splitlines()[0])
            continue
        missing = [name for name in names if name not in table.header]
        if missing:
            yield Raw(source, None, None, f"no column(s) {', '.join(missing)}")
            continue
        for start, part in table.blocks():
            columns = [part.column(name).to_pylist() for name in names]
            for row, cells in enumerate(zip(*columns, strict=True), start=start + 1):
                yield Raw(source, row, list(cells))
