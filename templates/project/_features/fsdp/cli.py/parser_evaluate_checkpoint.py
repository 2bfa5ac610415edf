    evaluate.add_argument(
        "--checkpoint", required=True, help="e.g. runs/default/best.pt, or a sharded best.dcp"
    )
