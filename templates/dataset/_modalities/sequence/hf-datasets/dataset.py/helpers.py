{%- from "_lib/parts.jinja" import length_lines, objective_part with context %}


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


{{- objective_part("dataset/hf-datasets/dataset.py", "sequence_helpers") }}


def load_tokenizer(name: str) -> Any:
    """`AutoTokenizer.from_pretrained(name)`, as the hf-text kind loads it; a missing
    library or tokenizer is one line."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise ConfigError("data.tokenizer needs transformers: pip install -e '.[hf]'") from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"data.tokenizer {name!r}: {str(exc).strip().splitlines()[0]}") from None
    if tokenizer.pad_token_id is None:
        raise ConfigError(f"data.tokenizer {name!r} has no padding token")
    return tokenizer


def encode_text(text: str, index: dict[str, int], tokenizer: Any, max_length: int) -> torch.Tensor:
    """Token ids (T,): the tokenizer's, with its special tokens, cut to max_length (as the
    hf-text kind encodes); without a tokenizer the word tokens of the "text" kind."""
    if tokenizer is None:
        return encode(text, index, max_length)
    ids = tokenizer(text, truncation=True, max_length=max_length)["input_ids"]
    return torch.tensor(ids, dtype=torch.long)


def batching(
    train: Dataset,
    val: Dataset,
    spec: DataSpec,
    cfg: Options,
    state: dict[str, Any],
    load_test: Callable[[], Dataset] | None = None,
    pad_index: int = PAD_INDEX,
) -> DataBundle:
{{ length_lines("dataset/hf-text/dataset.py", "batching") }}


def streamed_text(
    record: dict[str, Any],
    column: str,
    label: str,
    labels: dict[str, int],
    index: dict[str, int],
    tokenizer: Any,
    max_length: int,
) -> dict[str, torch.Tensor]:
    """One row of an Arrow file as a sample, encoded as the texts held in memory are."""
    inputs = encode_text(record[column] or "", index, tokenizer, max_length)  # (T,)
{%- set target %}
    return {"inputs": inputs, "targets": torch.tensor(labels[str(record[label])])}
{%- endset %}
{{- objective_part("dataset/hf-datasets/dataset.py", "stream_target") or target }}


def streams(
    cfg: Options,
    seed: int,
    state: dict[str, Any],
    spec: DataSpec,
    splits: list[Any],
    tokenizer: Any,
) -> DataBundle:
    """data.streaming: the train, validation and test splits (None: none) read from their
    Arrow files, each text encoded as it is read."""
    decode_row = functools.partial(
        streamed_text,
        column=state["text_column"],
        label=state["label_column"],
        labels=label_lookup(splits[0], state["label_column"], state["classes"]),
        index={token: i for i, token in enumerate(state.get("vocab", []))},
        tokenizer=tokenizer,
        max_length=cfg.max_length,
    )

    def stream(split: Any) -> ShardStream:
        return ShardStream(arrow_shards(split), arrow_rows, decode_row, seed, cfg.shuffle_buffer)

{{ length_lines("dataset/text-shards/dataset.py", "collate") }}
    pad_index = PAD_INDEX if tokenizer is None else tokenizer.pad_token_id
    collate = functools.partial(collate, pad_index=pad_index)
    test = splits[2]
    load_test = (lambda: stream(test)) if test is not None else None
    train, val = stream(splits[0]), stream(splits[1])
    return DataBundle(train, val, spec, collate, state=state, load_test=load_test)
