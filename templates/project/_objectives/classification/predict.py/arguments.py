    parser.add_argument("--top-k", type=int, default=5, help="classes listed per input (default 5)")
