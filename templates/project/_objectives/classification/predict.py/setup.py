    top_k = min(args.top_k, inference.task.num_classes)
