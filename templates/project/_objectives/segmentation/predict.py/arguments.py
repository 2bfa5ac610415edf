    parser.add_argument(
        "--mask-dir", help="folder of the mask PNGs (default: masks/ beside the checkpoint)"
    )
    parser.add_argument(
        "--overlay", action="store_true", help="also write STEM-overlay.png: mask on image"
    )
