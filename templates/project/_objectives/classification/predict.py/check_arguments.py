    if args.top_k < 1:
        raise ConfigError(f"--top-k must be at least 1; got {args.top_k}")
