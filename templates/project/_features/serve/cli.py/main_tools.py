        elif args.command == "serve":
            from .serve import serve

            return serve(args)
