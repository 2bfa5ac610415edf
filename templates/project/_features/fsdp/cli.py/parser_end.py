    consolidate = commands.add_parser(
        "consolidate",
        help="Write a sharded checkpoint (train.strategy=fsdp) as one file.",
        description="Gather a sharded checkpoint directory (train.strategy=fsdp, e.g. "
        "runs/default/best.dcp) into one checkpoint file, in this one process: evaluate, "
        "resume and any single process load it like last.pt.",
    )
    consolidate.add_argument("--checkpoint", required=True, help="a .dcp checkpoint directory")
    consolidate.add_argument("--output", required=True, help="the file to write, e.g. best.pt")
