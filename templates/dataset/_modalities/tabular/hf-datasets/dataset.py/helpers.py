{%- from "_lib/parts.jinja" import objective_part with context %}

MIN_CATEGORY_COUNT = 2  # a category seen once cannot be learned: it counts as unknown
NUMBER_TYPES = ("int", "uint", "float", "double")


def class_names(split: Any) -> dict[str, list[str]]:
    """The names of each ClassLabel column's classes."""
    return {name: kind.names for name, kind in split.features.items() if type(kind).__name__ == "ClassLabel"}


def as_table(split: Any, rows: torch.Tensor | None) -> Table:
    """The split's rows as the csv kind's Table (memory-mapped columns, no copy): numbers
    as numbers, text as text, ClassLabel columns as their names; other columns left out."""
    arrow = split.with_format("arrow")[:]  # pyarrow.Table of every row
    columns, numbers = {}, {}
    for name, kind in split.features.items():
        cells = arrow.column(name)
        if name in class_names(split):
            names = pa.array(class_names(split)[name], pa.string())
            columns[name] = pa.chunked_array([pc.take(names, chunk) for chunk in cells.chunks], pa.string())
        elif str(getattr(kind, "dtype", "")).startswith(NUMBER_TYPES):
            columns[name] = cells
            values = pc.fill_null(pc.cast(cells, pa.float64()), np.nan)  # missing: NaN
            numbers[name] = np.require(values.to_numpy(), requirements="W")  # (N,) float64
        elif str(getattr(kind, "dtype", "")) in ("string", "large_string", "bool"):
            columns[name] = pc.cast(cells, pa.string())
    table = Table(Path(f"{split.split or 'split'} split"), list(columns), columns, numbers=numbers)
    return table if rows is None else table.subset(rows.numpy())


def fit_schema(table: Table, target: str, cfg: Options) -> dict[str, Any]:
    """Every feature column's kind and statistics, fitted on the training rows."""
    columns, left_out = [], [f"{name} (data.ignore)" for name in cfg.ignore]
    for name in table.header:
        if name == target or name in cfg.ignore:
            continue
        if name in table.numbers:
            column = fit_numeric([table.values(name)], name)
        else:
            counts = category_counts(table.column(name), [])
            ranked = sorted(counts, key=lambda c: (-counts[c], c))  # most frequent first
            kept = [c for c in ranked if counts[c] >= MIN_CATEGORY_COUNT][: cfg.max_categories]
            missing = bool(table.column(name).null_count)
            column = {"name": name, "missing": missing, "kind": "categorical", "categories": sorted(kept)}
            column = column if kept or missing else None
        if column is None:
            left_out.append(f"{name} (constant, or no category seen twice)")
        else:
            columns.append(column)
    if not columns:
        raise ConfigError(f"{table.path}: no feature column varies in the training rows")
    left = f"; left out: {', '.join(left_out)}" if left_out else ""
    note(f"{len(table)} training rows; {len(columns)} feature columns{left}")
    return {"target": target, "na_values": [], "columns": columns}


def labelled(table: Table, target: str) -> Table:
    """The rows whose target is present (the number dropped is printed)."""
    missing = missing_targets(table, target, [])  # (N,)
    if missing.any():
        note(f"{table.path}: {int(missing.sum())} rows dropped: their target ({target}) is missing")
        return table.subset(np.flatnonzero(~missing))
    return table


def encode_features(table: Table, schema: dict[str, Any]) -> torch.Tensor:
    """The model inputs (N, F) of a table's rows, encoded with a fitted schema."""
    return encode_splits([table], schema, release=False)[0]
{{- objective_part("dataset/csv/dataset.py", "targets") }}


def streamed_row(
    record: dict[str, Any], names: dict[str, list[str]], numbers: list[str], state: dict[str, Any]
) -> dict[str, torch.Tensor]:
    """One row of an Arrow file as a sample, encoded as the rows held in memory are."""
    columns, values = {}, {}
    for name in [*(column["name"] for column in state["columns"]), state["target"]]:
        value = record[name]
        if name in numbers:
            values[name] = np.array([np.nan if value is None else value], np.float64)  # (1,)
            columns[name] = pa.chunked_array([pa.array([value], pa.float64())])
        else:
            text = names[name][value] if name in names and value is not None else value
            text = str(text).lower() if isinstance(text, bool) else text  # as Arrow casts it
            columns[name] = pa.chunked_array([pa.array([text], pa.string())])
    table = Table(Path("stream"), list(columns), columns, numbers=values)
    inputs = encode_features(table, state)[0]  # (F,)
    return {"inputs": inputs, "targets": encode_targets(table, state["target"], state)[0]}


def streams(cfg: Options, seed: int, state: dict[str, Any], spec: DataSpec, splits: list[Any]) -> DataBundle:
    """data.streaming: the train, validation and test splits (None: none) read from their
    Arrow files, each row encoded as it is read."""
    names = class_names(splits[0])
    numbers = [
        name
        for name, kind in splits[0].features.items()
        if name not in names and str(getattr(kind, "dtype", "")).startswith(NUMBER_TYPES)
    ]
    decode_row = functools.partial(streamed_row, names=names, numbers=numbers, state=state)

    def stream(split: Any) -> ShardStream:
        return ShardStream(arrow_shards(split), arrow_rows, decode_row, seed, cfg.shuffle_buffer)

    test = splits[2]
    load_test = (lambda: stream(test)) if test is not None else None
    return DataBundle(stream(splits[0]), stream(splits[1]), spec, state=state, load_test=load_test)
