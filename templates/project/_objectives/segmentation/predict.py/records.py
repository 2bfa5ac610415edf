def colour_table(count: int) -> list[tuple[int, int, int]]:
    """Distinct colours for class ids 0..count-1 (PASCAL VOC's scheme: the bits of the id
    spread over r, g and b from the high bit down); id 0 is black."""
    table = []
    for index in range(count):
        r = g = b = 0
        for bit in range(8):
            r |= ((index >> (3 * bit)) & 1) << (7 - bit)
            g |= ((index >> (3 * bit + 1)) & 1) << (7 - bit)
            b |= ((index >> (3 * bit + 2)) & 1) << (7 - bit)
        table.append((r, g, b))
    return table


class MaskWriter:
    """Writes each input's predicted mask (and overlay) to a folder, named after the input."""

    def __init__(self, folder: Path, inference: Inference, overlay: bool, force: bool) -> None:
        self.folder, self.overlay, self.task, self.force = folder, overlay, inference.task, force
        saved = [tuple(c) for c in inference.state.get("palette") or []]
        self.colours = saved or colour_table(self.task.num_classes)
        self.used: set[str] = set()
        folder.mkdir(parents=True, exist_ok=True)

    def name(self, source: str) -> str:
        """The input's file stem, numbered when two inputs share it."""
        stem, n = Path(source).stem, 1
        name = stem
        while name in self.used:
            n += 1
            name = f"{stem}-{n}"
        self.used.add(name)
        return name

    def write(self, items: list[Raw], outputs: torch.Tensor) -> Iterator[dict[str, Any]]:
        """Per input: the mask file, the overlay file (--overlay), each class's pixel share."""
        predicted = outputs.argmax(dim=1)  # (B, H, W) class ids
        flat = [c for colour in self.colours for c in colour]
        for item, ids in zip(items, predicted, strict=True):
            mask = Image.fromarray(ids.numpy().astype(np.uint8), mode="P")  # ids as indices
            mask.putpalette(flat)
            path = self.folder / f"{self.name(item.source)}.png"
            overlay = path.with_name(f"{path.stem}-overlay.png")
            for target in (path, overlay) if self.overlay else (path,):
                if target.exists() and not self.force:
                    raise ConfigError(
                        f"{target} exists; replace it with --force, or use another --mask-dir"
                    )
            mask.save(path)
            record: dict[str, Any] = {"mask": str(path)}
            if self.overlay:
                with Image.open(item.source) as opened:
                    image = to_rgb(opened).resize(mask.size, Image.Resampling.BILINEAR)
                Image.blend(image, mask.convert("RGB"), 0.5).save(overlay)
                record["overlay"] = str(overlay)
            counts = torch.bincount(ids.flatten(), minlength=self.task.num_classes)  # (K,)
            shares = (counts.double() / ids.numel()).tolist()
            record["class_shares"] = dict(zip(self.task.class_names, shares, strict=True))
            yield record
