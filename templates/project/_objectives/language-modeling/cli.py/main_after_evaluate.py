        elif args.command == "generate":
            generate.generate(args)
