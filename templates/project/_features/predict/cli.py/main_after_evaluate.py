        elif args.command == "predict":
            return 1 if predict.predict(args) else 0  # failed inputs are named on stderr
