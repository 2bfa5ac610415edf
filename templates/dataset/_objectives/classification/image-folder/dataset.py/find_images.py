def find_images(split_dir: Path) -> dict[str, list[Path]]:
    """{class name: sorted image files} of every class folder; an empty one is an error."""
    found = {}
    for class_dir in sorted(p for p in split_dir.iterdir() if p.is_dir() and visible(p, split_dir)):
        found[class_dir.name] = sorted(
            p
            for p in class_dir.rglob("*")
            if p.suffix.lower() in IMAGE_EXTENSIONS and visible(p, split_dir) and p.is_file()
        )
    empty = [name for name, files in found.items() if not files]
    if empty:
        raise ConfigError(
            f"class folder(s) without images in {split_dir}: {', '.join(empty)} "
            f"(images are {', '.join(sorted(IMAGE_EXTENSIONS))})"
        )
    return found
