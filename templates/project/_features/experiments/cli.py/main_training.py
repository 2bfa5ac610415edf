        elif args.command in ("repeat", "cv"):
            from .experiments import run_experiment

            return run_experiment(args)
