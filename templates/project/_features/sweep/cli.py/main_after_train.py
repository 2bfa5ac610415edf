        elif args.command == "sweep":
            from .sweep import run_sweep

            return run_sweep(args)
