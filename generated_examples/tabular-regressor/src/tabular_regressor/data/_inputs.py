"""Raw inputs for `predict` and `export`: what a dataset kind provides, and the readers.

A dataset kind that can read raw inputs defines `raw_inputs(cfg, state) -> RawInputs`: how
table rows become model inputs, from the options and the state saved in a checkpoint
alone (the training data need not exist). `predict` streams the raw inputs
through `read` and `prepare`, batches them with `collate_fn` and runs the model; `export`
writes `preprocessing` into the sidecar of an exported model, for programs that feed it
without this project.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from ._raw import Raw
from ._raw import RawInputs as RawInputs  # re-exported: the dataset kinds import it from here


def table_rows(sources: list[str], columns: list[str]) -> Iterator[Raw]:
    """The rows of CSV files with a header, each as its cells of `columns`, in that order;
    other columns (the target, say) are ignored. A file without some of them is one error."""
    for source in sources:
        path = Path(source).expanduser()
        if not path.is_file():
            yield Raw(source, None, None, "no such file")
            continue
        try:
            with open(path, encoding="utf-8", newline="") as handle:
                yield from csv_rows(source, csv.reader(handle), columns)
        except UnicodeDecodeError as exc:
            yield Raw(source, None, None, f"not UTF-8 text ({exc.reason}); the rest is skipped")
        except (OSError, csv.Error) as exc:
            yield Raw(source, None, None, str(exc))


def csv_rows(source: str, reader: Iterator[list[str]], columns: list[str]) -> Iterator[Raw]:
    header = [name.strip() for name in next(reader, [])]
    missing = [name for name in columns if name not in header]
    if missing:
        yield Raw(source, None, None, f"no column(s) {', '.join(missing)}")
        return
    where = [header.index(name) for name in columns]
    for row, cells in enumerate((cells for cells in reader if cells), start=1):  # blank: no row
        if len(cells) == len(header):
            yield Raw(source, row, [cells[i] for i in where])
        else:
            yield Raw(source, row, None, f"{len(cells)} cells, the header has {len(header)}")
