    root: str = option("", "folder with train/ (and val/) of images and data.labels_file; empty: synthetic images")
    val_fraction: float = option(
        0.2, "share of the training images held out for validation when root has no val/", low=0.0, high=1.0
    )
