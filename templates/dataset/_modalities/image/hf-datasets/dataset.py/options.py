    image_column: str = option("", "the image column (empty: the first Image column)")
    max_image_pixels: int = option(
        89_478_485, "larger images are refused (Pillow's decompression-bomb guard)", low=1
    )
    skip_bad_files: bool = option(False, "leave out images that do not decode (else: an error listing them)")
    augment: str = option("none", "training-split augmentation (see data/_augment.py)", choices=("none", "light", "standard"))
    augment_flip: bool = option(True, "augmentation mirrors images left-right (off for digits, text, ...)")
