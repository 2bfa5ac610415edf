        elif args.command == "plot":
            from .plot import plot_metrics

            print(f"wrote {plot_metrics(args.run_dir, args.output)}")
