    # decoding images (the cache's fill, a stream's rows) is the slow part: in parallel by default
    num_workers: int | str = option("auto", "DataLoader worker processes (0: the main process; auto: per usable core)", low=0, auto=True)
    image_column: str = option("", "the image column (empty: the first Image column)")
    max_image_pixels: int = option(
        89_478_485, "larger images are refused (Pillow's decompression-bomb guard)", low=1
    )
    skip_bad_files: bool = option(False, "leave out images that do not decode (else: an error listing them)")
    augment: str = option("none", "training-split augmentation (see data/_augment.py)", choices=("none", "light", "standard"))
    augment_flip: bool = option(True, "augmentation mirrors images left-right (off for digits, text, ...)")
    cache: str = option(
        "disk",
        "keep decoded images: disk (reused while the dataset is unchanged), memory (this run only)",
        choices=("none", "memory", "disk"),
    )
    cache_dir: str = option("runs/cache", "folder of data.cache=disk files (relative to the working directory)")
