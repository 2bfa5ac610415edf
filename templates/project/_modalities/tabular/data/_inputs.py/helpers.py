

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
