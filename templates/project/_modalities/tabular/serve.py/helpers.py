

def raw_value(value: Any, field: str, state: dict[str, Any]) -> list[str | None]:
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
    return cells
