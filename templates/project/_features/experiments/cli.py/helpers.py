

def seed_list(text: str) -> list[int]:
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in parts):
        raise argparse.ArgumentTypeError(f"expects seeds like 1,2,3, got {text!r}")
    return [int(part) for part in parts]
