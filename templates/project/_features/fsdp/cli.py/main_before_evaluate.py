        elif args.command == "consolidate":
            from .consolidate import consolidate

            done = consolidate(args.checkpoint, args.output)
            print(f"wrote {args.output}: step {done['step']}, {done['parameters']:,} parameters")
