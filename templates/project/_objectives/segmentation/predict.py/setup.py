    folder = args.mask_dir or Path(args.checkpoint).parent / "masks"  # never the data's
    masks = MaskWriter(Path(folder), inference, args.overlay, args.force)
