{%- from "_lib/parts.jinja" import length_lines with context %}


def text_of(split: Any, label: str, cfg: Options) -> str:
    """data.text_column, else the first text column that is not the label."""
    texts = [
        name
        for name, kind in split.features.items()
        if name != label and str(getattr(kind, "dtype", "")) in ("string", "large_string")
    ]
    if cfg.text_column:
        check_column(split, cfg.text_column, "data.text_column")
        if cfg.text_column not in texts:
            raise ConfigError(
                f"data.text_column {cfg.text_column!r} does not hold text: "
                f"{split.features[cfg.text_column]}"
            )
        return cfg.text_column
    if not texts:
        columns = ", ".join(split.features)
        raise ConfigError(f"no text column; set data.text_column to one of: {columns}")
    return texts[0]


def batching(
    train: Dataset,
    val: Dataset,
    spec: DataSpec,
    cfg: Options,
    state: dict[str, Any],
    load_test: Callable[[], Dataset] | None = None,
) -> DataBundle:
{{ length_lines("dataset/text/dataset.py", "batching") }}
