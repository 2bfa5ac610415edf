

class Upload(BytesIO):
    """An uploaded image's bytes, named in messages by the request field they came from."""

    def __init__(self, data: bytes, field: str) -> None:
        super().__init__(data)
        self.field = field

    def __repr__(self) -> str:
        return self.field


def raw_value(value: Any, field: str, state: dict[str, Any]) -> Upload:
    """An image: a file of a multipart form, or base64 text in JSON."""
    if isinstance(value, str):
        try:
            value = base64.b64decode(value, validate=True)
        except ValueError:
            raise BadInput(422, field, "not base64 text") from None
    if not isinstance(value, bytes):
        raise BadInput(422, field, f"expected an image as base64 text, got {type(value).__name__}")
    return Upload(value, field)
