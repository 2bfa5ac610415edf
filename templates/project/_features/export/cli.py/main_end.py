        elif args.command == "export":
            target = export.export(args)
            print(f"wrote {target} and its sidecar {target}.json")
