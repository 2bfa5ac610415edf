    """Rows of CSV or Parquet files (the feature columns by name, ClassLabel ones by their
    names; a target column is ignored), encoded exactly as in training; None for a model
    trained on the synthetic rows."""
    if not state:
        return None
    names = [column["name"] for column in state["columns"]]
    numeric = [i for i, column in enumerate(state["columns"]) if column["kind"] == "numeric"]

    def prepare(cells: list[str | None]) -> dict[str, list[str | None]]:
        cells = [None if cell is None else cell.strip() for cell in cells]  # `names`, in order
        for i in numeric:
            if cells[i] not in (None, "") and to_number(cells[i]) is None:
                raise ValueError(f"column {names[i]!r} is not a number: {cells[i]!r}")
        return {"cells": cells}

    def encode(rows: list[dict[str, list[str | None]]]) -> dict[str, torch.Tensor]:
        columns = zip(*(row["cells"] for row in rows), strict=True)
        arrays = [pa.chunked_array([pa.array(cells, pa.string())]) for cells in columns]
        table = Table(Path("predict"), names, dict(zip(names, arrays, strict=True)))
        return {"inputs": encode_features(table, state)}  # (B, F)

    steps = {  # what encode_features does, for programs that feed an exported model
        "columns": state["columns"],  # numeric (value - mean) / std; categorical one-hot
        "features": state["features"],  # the name of each model input, in order
        "target": state["target"],
    }
    return RawInputs(lambda sources: table_rows(sources, names, []), prepare, steps, encode)
