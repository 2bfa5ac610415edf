    plot = commands.add_parser("plot", help="Draw loss/metric curves from a run's metrics.csv.")
    plot.add_argument("--run-dir", default="runs/default", help="run directory (train.out_dir)")
    plot.add_argument("--output", help="PNG file to write (default: RUN_DIR/metrics.png)")
