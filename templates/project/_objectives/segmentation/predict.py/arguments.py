    parser.add_argument(
        "--mask-dir", default="masks", help="folder of the mask PNGs (default: masks)"
    )
    parser.add_argument(
        "--overlay", action="store_true", help="also write STEM-overlay.png: mask on image"
    )
