

class Row(list):
    """A table row's cells in the training's column order, as the csv kind's `prepare` reads
    them, and by column name, as the table-shards kind's reads them."""

    def __init__(self, names: list[str], cells: list[str | None]) -> None:
        super().__init__(cells)
        self.names = names

    def __getitem__(self, key: Any) -> Any:
        return super().__getitem__(self.names.index(key) if isinstance(key, str) else key)


def raw_value(value: Any, field: str, state: dict[str, Any]) -> Row:
    """A table row: a JSON object of column values (null: a missing cell; other keys, the
    target's say, are ignored), as the cells of the training's columns, in their order."""
    if not isinstance(value, dict):
        kind = type(value).__name__
        raise BadInput(422, field, f"expected an object of column values, got {kind}")
    names = [column["name"] for column in state["columns"]]
    missing = [name for name in names if name not in value]
    if missing:
        raise BadInput(422, f"{field}.{missing[0]}", f"missing column(s) {', '.join(missing)}")
    cells: list[str | None] = []
    for name in names:
        cell = value[name]
        if isinstance(cell, bool) or not isinstance(cell, str | int | float | None):
            kind = type(cell).__name__
            raise BadInput(422, f"{field}.{name}", f"expected a number, a text or null, got {kind}")
        cells.append(cell if cell is None or isinstance(cell, str) else str(cell))
    return Row(names, cells)
