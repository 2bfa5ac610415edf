

def labelled(by_class: dict[str, list[Path]], classes: list[str], split: str) -> list[tuple[Path, int]]:
    unknown = sorted(set(by_class) - set(classes))
    if unknown:
        raise ConfigError(f"{split} split has classes not seen in training: {', '.join(unknown)}")
    index = {name: i for i, name in enumerate(classes)}
    return [(path, index[name]) for name, files in by_class.items() for path in files]
