
IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff"}
MAX_LISTED = 20  # bad images named in the error; the count covers them all
MAX_STATS_IMAGES = 2000  # mean/std are estimated on at most this many training images


def decode(source: Any, size: int, max_pixels: int) -> torch.Tensor:
    """An image (a path, or encoded bytes) as uint8 pixels (3, size, size), decoded as the
    image-folder kind decodes its files; ValueError or OSError with the reason."""
    from PIL import Image, ImageOps

    Image.MAX_IMAGE_PIXELS = None  # checked here: Pillow only warns up to twice its limit
    with Image.open(io.BytesIO(source) if isinstance(source, bytes) else source) as image:
        if image.width * image.height > max_pixels:
            raise ValueError(f"{image.width}x{image.height} pixels > data.max_image_pixels")
        ImageOps.exif_transpose(image, in_place=True)
        rgb = to_rgb(image).resize((size, size), Image.Resampling.BILINEAR)
    pixels = torch.frombuffer(bytearray(rgb.tobytes()), dtype=torch.uint8)  # (S*S*3,)
    return pixels.view(size, size, 3).permute(2, 0, 1).contiguous()  # (3, S, S)


def decode_column(split: Any, name: str, rows: torch.Tensor | None, cfg: Options) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows' images as uint8 pixels (N, 3, S, S) and the rows that decoded (N,) bool;
    images that do not decode are one error listing them, or (data.skip_bad_files) left out."""
    from datasets import Image as ImageFeature
    from PIL import UnidentifiedImageError

    if type(check_column(split, name, "data.image_column")).__name__ != "Image":
        raise ConfigError(f"data.image_column {name!r} is not an Image column: {split.features[name]}")
    cells = column(split.cast_column(name, ImageFeature(decode=False)), name, rows)
    size = cfg.image_size
    pixels = torch.zeros(len(cells), 3, size, size, dtype=torch.uint8)  # (N, 3, S, S)
    good, bad = torch.ones(len(cells), dtype=torch.bool), []
    for i, cell in enumerate(cells.to_pylist()):
        source = (cell or {}).get("bytes") or (cell or {}).get("path")
        try:
            if not source:
                raise ValueError("no image")
            pixels[i] = decode(source, size, cfg.max_image_pixels)
        except (OSError, ValueError, SyntaxError) as exc:
            good[i] = False
            row = i if rows is None else int(rows[i])
            reason = "not an image" if isinstance(exc, UnidentifiedImageError) else str(exc)
            bad.append(f"row {row} ({reason.splitlines()[0] if reason else type(exc).__name__})")
    if bad and not cfg.skip_bad_files:
        listed = "; ".join(bad[:MAX_LISTED]) + (" ..." if len(bad) > MAX_LISTED else "")
        raise ConfigError(
            f"{len(bad)} images of the {split.split} split do not decode: {listed}; "
            "leave them out with --set data.skip_bad_files=true"
        )
    if bad:
        note(f"{len(bad)} images of the {split.split} split left out: they do not decode")
    return pixels, good


def channel_stats(pixels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel mean and std (3,) of uint8 images (N, 3, S, S), as values in [0, 1]."""
    total = torch.zeros(3, dtype=torch.float64)  # (3,)
    squares = torch.zeros(3, dtype=torch.float64)  # (3,)
    for image in pixels:
        values = image.double() / 255.0  # (3, S, S)
        total += values.sum(dim=(1, 2))
        squares += values.square().sum(dim=(1, 2))
    count = len(pixels) * pixels.shape[2] * pixels.shape[3]
    mean = total / count  # (3,)
    std = (squares / count - mean.square()).clamp(min=0).sqrt()  # (3,)
    return mean.float(), std.float().clamp(min=1e-6)


class Images(Dataset):
    """Samples {"inputs": (3, S, S) normalised float, "targets": class index} of decoded
    images held as uint8."""

    def __init__(
        self,
        pixels: torch.Tensor,
        targets: torch.Tensor,
        mean: torch.Tensor,
        std: torch.Tensor,
        augmentation: str = "none",
        flip: bool = True,
        seed: int = 0,
    ) -> None:
        self.pixels, self.targets = pixels, targets  # (N, 3, S, S) uint8, (N,)
        self.mean, self.std = mean.view(3, 1, 1), std.view(3, 1, 1)  # (3, 1, 1)
        self.augmentation, self.flip, self.seeds = augmentation, flip, EpochSeeds(seed)
        self.held_in_memory = augmentation == "none"  # a sample is a slice and nothing more

    def set_epoch(self, epoch: int) -> None:
        """Augmentation draws from (seed, epoch, index): the same after a resume."""
        self.seeds.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        image = self.pixels[index].float() / 255.0  # (3, S, S)
        if self.augmentation != "none":
            image = augment(image, self.augmentation, self.flip, self.seeds.generator(index))
        return {"inputs": (image - self.mean) / self.std, "targets": self.targets[index]}

    def __getitems__(self, indices: list[int] | torch.Tensor) -> Sequence[Any]:
        """A batch in one index operation (without augmentation, which draws per image)."""
        if self.augmentation != "none":
            return [self[i] for i in indices]
        rows = torch.as_tensor(indices, dtype=torch.long)  # (B,)
        images = self.pixels[rows].float() / 255.0  # (B, 3, S, S)
        return Batch({"inputs": (images - self.mean) / self.std, "targets": self.targets[rows]})


def images(split: Any, rows: torch.Tensor | None, cfg: Options, state: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows' pixels (N, 3, S, S) and class indices (N,), bad images left out."""
    pixels, good = decode_column(split, state["image_column"], rows, cfg)
    targets = class_targets(split, state["label_column"], rows, state["classes"])  # (N,)
    return pixels[good], targets[good]


def streamed_image(
    record: dict[str, Any],
    column: str,
    label: str,
    labels: dict[str, int],
    size: int,
    max_pixels: int,
    mean: torch.Tensor,
    std: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """One row of an Arrow file as a sample, prepared as the images held in memory are."""
    cell = record[column] or {}
    try:
        pixels = decode(cell.get("bytes") or cell.get("path") or b"", size, max_pixels)
    except (OSError, ValueError, SyntaxError) as exc:
        raise ConfigError(f"an image of column {column!r} does not decode: {exc}") from None
    image = pixels.float() / 255.0  # (3, S, S)
    inputs = (image - mean.view(3, 1, 1)) / std.view(3, 1, 1)
    return {"inputs": inputs, "targets": torch.tensor(labels[str(record[label])])}


def streams(cfg: Options, seed: int, state: dict[str, Any], splits: list[Any]) -> DataBundle:
    """data.streaming: the train, validation and test splits (None: none) read from their
    Arrow files, each image decoded as it is read (not augmented)."""
    train = splits[0]
    if "mean" not in state:  # from evenly spaced training images
        rows = torch.arange(0, len(train), max(len(train) // MAX_STATS_IMAGES, 1))
        pixels, good = decode_column(train, state["image_column"], rows, cfg)
        state["mean"], state["std"] = channel_stats(pixels[good])
    decode_row = functools.partial(
        streamed_image,
        column=state["image_column"],
        label=state["label_column"],
        labels=label_lookup(train, state["label_column"], state["classes"]),
        size=cfg.image_size,
        max_pixels=cfg.max_image_pixels,
        mean=state["mean"],
        std=state["std"],
    )

    def stream(split: Any) -> ShardStream:
        return ShardStream(arrow_shards(split), arrow_rows, decode_row, seed, cfg.shuffle_buffer)

    spec = DataSpec(num_outputs=len(state["classes"]), in_channels=3, image_size=cfg.image_size)
    test = splits[2]
    load_test = (lambda: stream(test)) if test is not None else None
    return DataBundle(stream(train), stream(splits[1]), spec, state=state, load_test=load_test)
