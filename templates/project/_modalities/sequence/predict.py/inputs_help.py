        help="text files: one text per line, or the `text` column of a .csv/.tsv/.jsonl file",
