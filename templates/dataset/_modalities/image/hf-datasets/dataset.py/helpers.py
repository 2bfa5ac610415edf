
MAX_LISTED = 20  # bad images named in the error; the count covers them all


class EncodedImages:
    """The images of an Image column by index, over the rows of one or more splits, read
    from their memory-mapped Arrow files as asked: encoded bytes (a file object over them,
    not a copy), or the file a cell names; None for an empty cell."""

    def __init__(self, column: str, parts: list[tuple[Any, torch.Tensor]]) -> None:
        self.parts = [(split.select_columns([column]).with_format("arrow"), rows) for split, rows in parts]
        self.ends = list(itertools.accumulate(len(rows) for _, rows in parts))

    def __len__(self) -> int:
        return self.ends[-1] if self.ends else 0

    def __getitem__(self, index: int) -> Path | IO[bytes] | None:
        import pyarrow as pa

        part = bisect.bisect_right(self.ends, index)
        split, rows = self.parts[part]
        cell = split[int(rows[index - (self.ends[part - 1] if part else 0)])].column(0)[0]
        if cell.is_valid and cell["bytes"].is_valid:
            return pa.BufferReader(cell["bytes"].as_buffer())
        return Path(cell["path"].as_py()) if cell.is_valid and cell["path"].is_valid else None


def usable_rows(split: Any, rows: torch.Tensor | None, cfg: Options, column: str) -> torch.Tensor:
    """The rows (None: all) whose image can be used, checked cheaply (`problem`); the others
    are one error listing them, or (data.skip_bad_files) left out."""
    if type(check_column(split, column, "data.image_column")).__name__ != "Image":
        raise ConfigError(f"data.image_column {column!r} is not an Image column: {split.features[column]}")
    rows = torch.arange(len(split)) if rows is None else rows
    images, bad = EncodedImages(column, [(split, rows)]), {}
    for i in range(len(images)):
        source = images[i]
        reason = "no image" if source is None else problem(source, cfg.max_image_pixels)
        if reason:
            bad[i] = f"row {int(rows[i])} ({reason})"
    if bad and not cfg.skip_bad_files:
        listed = "; ".join(list(bad.values())[:MAX_LISTED]) + (" ..." if len(bad) > MAX_LISTED else "")
        raise ConfigError(
            f"{len(bad)} images of the {split.split} split do not decode: {listed}; "
            "leave them out with --set data.skip_bad_files=true"
        )
    if bad:
        note(f"{len(bad)} images of the {split.split} split left out: they do not decode")
    good = torch.ones(len(rows), dtype=torch.bool)  # (N,)
    good[list(bad)] = False
    return rows[good]


def image_cache(cfg: Options, part: str, column: str, parts: list[tuple[Any, torch.Tensor]]) -> ImageCache:
    """The decoded images of the parts' rows, in order; a disk cache is named by the splits'
    fingerprints (the datasets library's hash of their content) and the rows taken."""
    folder = Path(cfg.root).expanduser()
    where = str(folder.resolve()) if folder.is_dir() else cfg.root
    key = [f"\n{column}"]
    for split, rows in parts:
        taken = hashlib.blake2b(rows.numpy().tobytes(), digest_size=8).hexdigest()
        key.append(f"\n{split._fingerprint}/{taken}")
    return ImageCache(EncodedImages(column, parts), cfg, where, part, key)


def streamed_image(
    record: dict[str, Any],
    column: str,
    label: str,
    labels: dict[str, int],
    size: int,
    max_pixels: int,
    mean: torch.Tensor,
    std: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """One row of an Arrow file as a sample, prepared as the images held in memory are."""
    cell = record[column] or {}
    if not cell.get("bytes") and not cell.get("path"):
        raise ConfigError(f"a row of column {column!r} has no image")
    source = io.BytesIO(cell["bytes"]) if cell.get("bytes") else Path(cell["path"])
    image = load_image(source, size, max_pixels)  # (3, S, S)
    inputs = (image - mean.view(3, 1, 1)) / std.view(3, 1, 1)
    return {"inputs": inputs, "targets": torch.tensor(labels[str(record[label])])}


def streams(cfg: Options, seed: int, state: dict[str, Any], splits: list[Any]) -> DataBundle:
    """data.streaming: the train, validation and test splits (None: none) read from their
    Arrow files, each image decoded as it is read (not augmented)."""
    train = splits[0]
    if "mean" not in state:  # from evenly spaced training images
        rows = torch.arange(0, len(train), max(len(train) // MAX_STATS_IMAGES, 1))
        rows = usable_rows(train, rows, cfg, state["image_column"])
        images = EncodedImages(state["image_column"], [(train, rows)])
        cache = ImageCache(images, dataclasses.replace(cfg, cache="none"), "", "", ())
        state["mean"], state["std"] = cache.channel_stats(len(rows))
    decode_row = functools.partial(
        streamed_image,
        column=state["image_column"],
        label=state["label_column"],
        labels=label_lookup(train, state["label_column"], state["classes"]),
        size=cfg.image_size,
        max_pixels=cfg.max_image_pixels,
        mean=state["mean"],
        std=state["std"],
    )

    def stream(split: Any) -> ShardStream:
        return ShardStream(arrow_shards(split), arrow_rows, decode_row, seed, cfg.shuffle_buffer)

    spec = DataSpec(num_outputs=len(state["classes"]), in_channels=3, image_size=cfg.image_size)
    test = splits[2]
    load_test = (lambda: stream(test)) if test is not None else None
    return DataBundle(stream(train), stream(splits[1]), spec, state=state, load_test=load_test)
