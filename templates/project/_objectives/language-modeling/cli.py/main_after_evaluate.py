        elif args.command == "generate":
            print(generate.generate(args))
