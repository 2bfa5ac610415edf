

def raw_value(value: Any, field: str, state: dict[str, Any]) -> str:
    """A text: a JSON string, or a file of a multipart form in UTF-8."""
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise BadInput(422, field, "not UTF-8 text") from None
    if not isinstance(value, str):
        raise BadInput(422, field, f"expected a text, got {type(value).__name__}")
    return value
