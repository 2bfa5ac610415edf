def find_images(split_dir: Path) -> dict[str, list[Path]]:
    """{"": sorted image files} of a split folder and all its sub-folders (one group: the
    labels come from the labels file); a folder without images is an error."""
    files = sorted(
        p
        for p in split_dir.rglob("*")
        if p.suffix.lower() in IMAGE_EXTENSIONS and visible(p, split_dir) and p.is_file()
    )
    if not files:
        raise ConfigError(f"no images ({', '.join(sorted(IMAGE_EXTENSIONS))}) in {split_dir}")
    return {"": files}


def read_labels(cfg: Options) -> dict[str, list[str]]:
    """{image path relative to root (posix): its labels} from data.labels_file; every
    entry must name an image under root/train, val or test."""
    root = Path(cfg.root).expanduser()
    path = root / Path(cfg.labels_file).expanduser()  # an absolute labels_file stays as is
    if not path.is_file():
        raise FileNotFoundError(
            f"data.labels_file {path} does not exist: it maps each image to its labels "
            "(CSV file,labels or JSON {file: [labels]})"
        )
    try:
        if path.suffix.lower() == ".json":
            raw = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=list)
            if not isinstance(raw, list) or not all(isinstance(p, tuple) for p in raw):
                raise ValueError("expected an object {file: [labels]}")
            entries = [
                (f"entry {i} ({k!r})", str(k), v.split(cfg.label_separator) if isinstance(v, str) else v)
                for i, (k, v) in enumerate(raw, 1)
            ]
        else:
            with open(path, newline="", encoding="utf-8") as handle:
                reader = csv.reader(handle)
                next(reader, None)  # the header names the columns
                entries = [(f"row {reader.line_num}", row[0], row[1].split(cfg.label_separator)) for row in reader if row]
    except (ValueError, IndexError, UnicodeDecodeError) as exc:
        raise ConfigError(f"data.labels_file {path} cannot be read: {exc}") from exc
    labels: dict[str, list[str]] = {}
    first: dict[str, str] = {}  # where each file's entry is
    for where, file, names in entries:
        key, found = Path(file).as_posix(), sorted({str(label).strip() for label in names} - {""})
        if labels.get(key, found) != found:
            raise ConfigError(
                f"data.labels_file {path}: {first[key]} and {where} give {key} different labels "
                f"({'|'.join(labels[key])} and {'|'.join(found)}): keep one"
            )
        labels[key] = found
        first.setdefault(key, where)
    unknown = [file for file in labels if not (root / file).is_file()]
    if unknown:
        raise ConfigError(
            f"data.labels_file {path} names {len(unknown)} file(s) not under {root}: "
            f"{', '.join(unknown[:5])}"
        )
    return labels


def labelled(
    by_class: dict[str, list[Path]], sets: dict[str, list[str]], classes: list[str], root: Path, split: str
) -> list[tuple[Path, list[float]]]:
    """(file, multi-hot targets over `classes`) of a split; a file without an entry in the
    labels file is an error; labels that training lacks are left out (with a note)."""
    files = [path for paths in by_class.values() for path in paths]
    missing = [path.relative_to(root).as_posix() for path in files if path.relative_to(root).as_posix() not in sets]
    if missing:
        raise ConfigError(
            f"{len(missing)} {split} image(s) have no entry in data.labels_file: "
            f"{', '.join(missing[:5])}"
        )
    index = {name: i for i, name in enumerate(classes)}
    unseen = sorted({name for path in files for name in sets[path.relative_to(root).as_posix()]} - set(index))
    if unseen:
        note(f"{split} split: labels not seen in training are ignored: {', '.join(unseen)}")
    result = []
    for path in files:
        targets = [0.0] * len(classes)
        for name in sets[path.relative_to(root).as_posix()]:
            if name in index:
                targets[index[name]] = 1.0
        result.append((path, targets))
    return result
