    sweep = add("sweep", "Search hyperparameters with Optuna (default --config configs/sweep.toml)")
    sweep.add_argument("--trials", type=positive, required=True, help="trials the study holds")
    sweep.add_argument("--study", default="sweep", help="study name (default: sweep)")
    sweep.add_argument("--out", help="folder of the trials (default: runs/STUDY)")
    sweep.add_argument(
        "--storage", help="SQLAlchemy URL of the study (default: sqlite:///OUT/study.db)"
    )
    sweep.add_argument(
        "--resume", action="store_true", help="continue the study, or join it from another process"
    )
