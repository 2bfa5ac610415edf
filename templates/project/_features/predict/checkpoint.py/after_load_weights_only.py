

def is_checkpoint(path: Path) -> bool:
    """Whether a file holds a checkpoint by its content, whatever its name: torch.save's zip
    archive or pickle, or safetensors (8 bytes of header size, then its JSON)."""
    with open(path, "rb") as handle:
        head = handle.read(9)
    pickle = head[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
    header = int.from_bytes(head[:8], "little")
    if pickle or (head[8:9] == b"{" and header + 8 <= path.stat().st_size):
        return True
    with contextlib.suppress(zipfile.BadZipFile), zipfile.ZipFile(path) as archive:
        return any(name.endswith("/data.pkl") for name in archive.namelist())
    return False
