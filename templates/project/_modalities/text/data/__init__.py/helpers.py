

def read_text(path: Path) -> str:
    """A data file's text; bytes that are not UTF-8 are an error naming the file and line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x}); save it as UTF-8"
        ) from None
