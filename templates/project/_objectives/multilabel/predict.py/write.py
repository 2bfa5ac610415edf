            output.write(records(items, label_sets(inference.task, outputs)))
