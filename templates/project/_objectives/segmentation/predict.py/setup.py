    masks = MaskWriter(Path(args.mask_dir), inference, args.overlay)
