        elif args.command == "lr-find":
            from .lr_find import run_lr_find

            return run_lr_find(args)
